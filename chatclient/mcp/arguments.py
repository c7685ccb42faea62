"""The model's arguments for an MCP tool checked against the tool's input schema before the call.

A server may check nothing (a low-level server received ``{'n': 'not-int'}``), and a rejected call
costs a round trip; a local schema-checked tool tells the model what is wrong, and so does this,
with the same words (``ToolArgumentsError`` from ``jsonschema``'s errors).

Full validation costs tens of microseconds a call, more than the rest of the adaptation. So the
schema is first compiled into a *quick check* when it uses only the keywords most tool schemas do
(``type``, ``properties``, ``required``, ``additionalProperties: false``, ``items``, ``anyOf``,
scalar ``enum``, annotations): a quick pass means ``jsonschema`` would accept the value too. A
quick failure, or a schema beyond that subset, goes to ``jsonschema``, compiled once per callback
(per listed tool set), which has the last word and writes the message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..tools._json_schema import raise_invalid_arguments

__all__ = ["ArgumentsCheck"]

Quick = Callable[[Any], bool]
"""``True``: certainly valid; ``False``: ask ``jsonschema``."""

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_SUPPORTED = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "anyOf", "enum"}
_ROOT_ONLY = frozenset({"$schema"})
_DRAFTS = ("http://json-schema.org/draft-0", "https://json-schema.org/draft/")
_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),  # by exact type: a bool is not an integer in JSON
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
    "array": frozenset({list}),
    "object": frozenset({dict}),
}
_SCALARS = (str, int, float, bool, type(None))


class ArgumentsCheck:
    """Checks one tool's arguments; the quick check is built at once, ``jsonschema`` on first need."""

    __slots__ = ("_quick", "_schema", "_validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = schema
        self._quick = _root(schema)
        self._validator: Any = None

    @property
    def is_quick(self) -> bool:
        """Whether valid arguments pass without ``jsonschema`` (the schema is in the quick subset)."""
        return self._quick is not None

    def check(self, arguments: dict[str, Any], tool_name: str) -> None:
        """Raise ``ToolArgumentsError`` naming every fault when ``arguments`` do not fit the schema."""
        if self._quick is not None and self._quick(arguments):
            return
        if self._validator is None:
            from jsonschema import validators

            self._validator = validators.validator_for(self._schema)(self._schema)
        raise_invalid_arguments(self._validator, arguments, tool_name)


def _root(schema: Mapping[str, Any]) -> Quick | None:
    declared = schema.get("$schema")
    if declared is not None and not (isinstance(declared, str) and declared.startswith(_DRAFTS)):
        return None  # another dialect (draft 3's ``required`` differs): always ``jsonschema``
    return _node({k: v for k, v in schema.items() if k not in _ROOT_ONLY})


def _node(schema: Any) -> Quick | None:
    """The quick check of one schema, or ``None`` when it uses a keyword outside the subset."""
    if schema is True or schema == {}:
        return _anything
    if not isinstance(schema, dict) or not schema.keys() <= _SUPPORTED:
        return None
    checks: list[Quick] = []
    for build in (_type, _enum, _any_of, _items, _object):
        check = build(schema)
        if check is None:
            return None
        if check is not _anything:
            checks.append(check)
    if not checks:
        return _anything
    if len(checks) == 1:
        return checks[0]
    return _all_of(tuple(checks))


def _all_of(checks: tuple[Quick, ...]) -> Quick:
    def quick(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 (a loop, not ``all()`` over a generator: no generator frame per call)
            if not check(value):
                return False
        return True

    return quick


def _anything(_value: Any) -> bool:
    return True


def _type(schema: dict[str, Any]) -> Quick | None:
    if "type" not in schema:
        return _anything
    allowed = _python_types(schema["type"])
    if allowed is None:
        return None
    return lambda v: type(v) in allowed


def _python_types(declared: Any) -> frozenset[type] | None:
    """The Python types of a ``type`` keyword's JSON values (compared by exact type)."""
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    return frozenset().union(*(_TYPES[n] for n in names))


def _type_only(schema: Any) -> frozenset[type] | None:
    """A property schema that only says its type (and annotations): checked inline, without a call."""
    if not isinstance(schema, dict) or "type" not in schema or not schema.keys() - {"type"} <= _ANNOTATIONS:
        return None
    return _python_types(schema["type"])


def _enum(schema: dict[str, Any]) -> Quick | None:
    if "enum" not in schema:
        return _anything
    values = schema["enum"]
    if not isinstance(values, list) or not all(isinstance(e, _SCALARS) for e in values):
        return None
    allowed = [(type(e), e) for e in values]  # by type too: JSON's 1 is not true, Python's is
    return lambda v: (type(v), v) in allowed


def _any_of(schema: dict[str, Any]) -> Quick | None:
    if "anyOf" not in schema:
        return _anything
    options = schema["anyOf"]
    if not isinstance(options, list) or not options:
        return None
    checks = [_node(option) for option in options]
    if any(check is None for check in checks):
        return None
    known = [check for check in checks if check is not None]
    return lambda v: any(check(v) for check in known)


def _items(schema: dict[str, Any]) -> Quick | None:
    if "items" not in schema:
        return _anything
    item = _node(schema["items"])  # a list of schemas (draft 4's tuples) is not in the subset: None
    if item is None:
        return None
    return lambda v: type(v) is not list or all(item(x) for x in v)


def _object(schema: dict[str, Any]) -> Quick | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not isinstance(closed, bool):
        return None
    if not properties and not required and closed:
        return _anything
    checks: dict[str, Quick | frozenset[type]] = {}
    for name, sub in properties.items():
        check = _type_only(sub) or _node(sub)
        if check is None:
            return None
        checks[name] = check
    return _object_check(checks, tuple(required), closed)


def _object_check(checks: dict[str, Quick | frozenset[type]], needed: tuple[Any, ...], closed: bool) -> Quick:
    """Required names present, each known property's value fits, no other names when ``closed``."""

    def quick(value: Any) -> bool:
        if type(value) is not dict:
            return True  # properties and required apply to objects only; ``type`` says if it must be one
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            check = checks.get(name)
            if check is None:
                if not closed:
                    return False
            elif type(check) is frozenset:
                if type(item) not in check:
                    return False
            elif not check(item):  # type: ignore[operator]
                return False
        return True

    return quick
