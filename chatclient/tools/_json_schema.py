"""Tools whose argument schema is given as JSON Schema (a catalogue, an MCP server, a config file).

The arguments are validated against the schema with ``jsonschema`` (the reference validator, an
optional extra: ``pip install 'chatclient[jsonschema]'``), compiled once per tool on first use; the
function then receives them as one ``dict`` (and, if it takes a second parameter, the ``ToolContext``).
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError, ToolArgumentsError
from ._results import normalize_arguments
from .definition import ToolContext

__all__ = ["SchemaSignature", "input_schema_problem", "raise_invalid_arguments"]

_MAX_REPORTED_ERRORS = 8


class SchemaSignature:
    """The ``ToolSignature`` counterpart for an explicit JSON schema."""

    __slots__ = ("_keywords", "_schema", "_takes_context", "_validator", "skips_self")

    def __init__(self, fn: Callable[..., Any], schema: Mapping[str, Any]) -> None:
        label = getattr(fn, "__qualname__", repr(fn))
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise ConfigurationError(
                f"The input_schema of tool function {label} must be a JSON schema of type 'object' "
                "(a tool's arguments are one JSON object)"
            )
        try:
            parameters = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"Cannot read the signature of tool function {label}: {exc}") from exc
        if not 1 <= len(parameters) <= 2:
            raise ConfigurationError(
                f"Tool function {label} must take (arguments) or (arguments, context) with an input_schema; "
                f"it takes {len(parameters)} parameters"
            )
        self._schema: dict[str, Any] = copy.deepcopy(dict(schema))
        self._takes_context = len(parameters) == 2
        self._keywords = tuple(p.name if p.kind == p.KEYWORD_ONLY else None for p in parameters)
        self._validator: Any = None
        self.skips_self = False
        self._compile()  # a bad schema is a configuration error now, not at the model's first call

    @property
    def json_schema(self) -> dict[str, Any]:
        return self._schema

    def parse(self, arguments: str, tool_name: str) -> dict[str, Any]:
        """Parse the model's raw JSON and validate it against the schema."""
        try:
            value = json.loads(normalize_arguments(arguments))
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"The arguments for tool '{tool_name}' are not valid JSON ({exc}). "
                "Send the arguments as one JSON object.",
                tool_name=tool_name,
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                f"Invalid arguments for tool '{tool_name}': the arguments must be a JSON object", tool_name=tool_name
            )
        raise_invalid_arguments(self._compile(), value, tool_name)
        return value

    def call_args(self, parsed: Any, context: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        values = (parsed, context) if self._takes_context else (parsed,)
        args = [v for v, keyword in zip(values, self._keywords, strict=False) if keyword is None]
        kwargs = {keyword: v for v, keyword in zip(values, self._keywords, strict=False) if keyword is not None}
        return args, kwargs

    def _compile(self) -> Any:
        if self._validator is None:
            try:
                from jsonschema import validators
                from jsonschema.exceptions import SchemaError
            except ImportError as exc:
                raise ConfigurationError(
                    "Tools with an input_schema validate arguments with the 'jsonschema' package: "
                    "pip install 'chatclient[jsonschema]'"
                ) from exc
            cls = validators.validator_for(self._schema)
            try:
                cls.check_schema(self._schema)
            except SchemaError as exc:
                raise ConfigurationError(f"The input_schema is not a valid JSON schema: {exc.message}") from exc
            self._validator = cls(self._schema)
        return self._validator


def input_schema_problem(schema: Any) -> str | None:
    """What makes ``schema`` unusable as a tool's input schema, or ``None``: it must be a JSON object
    of ``type`` ``object`` (when it says) that its own metaschema accepts. A schema that fails here
    would make the provider reject every request offering the tool, with an error that names none."""
    if not isinstance(schema, Mapping):
        return f"the input schema is a {type(schema).__name__}, not a JSON object"
    if schema.get("type", "object") != "object":
        return f"the input schema's type is {schema.get('type')!r}, not 'object' (a tool's arguments are one object)"
    try:
        from jsonschema import validators
        from jsonschema.exceptions import SchemaError
    except ImportError as exc:
        raise ConfigurationError(
            "Checking a tool's input schema needs the 'jsonschema' package: pip install 'chatclient[jsonschema]'"
        ) from exc
    try:
        validators.validator_for(schema).check_schema(dict(schema))
    except SchemaError as exc:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.absolute_path).lstrip(".")
        return f"{where}: {exc.message}" if where else exc.message
    except Exception as exc:  # e.g. a ``$schema`` that is not a string: still a bad schema
        return f"{type(exc).__name__}: {exc}"
    return None


def raise_invalid_arguments(validator: Any, value: Any, tool_name: str) -> None:
    """Raise ``ToolArgumentsError`` listing what ``validator`` (a compiled ``jsonschema`` validator)
    finds wrong with ``value``, in the words the model reads for every schema-checked tool."""
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        parts = [_describe(error) for error in errors[:_MAX_REPORTED_ERRORS]]
        if len(errors) > _MAX_REPORTED_ERRORS:
            parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
        message = f"Invalid arguments for tool '{tool_name}': {'; '.join(parts)}"
        raise ToolArgumentsError(message, tool_name=tool_name)


def _describe(error: Any) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    return f"{path}: {error.message}" if path else error.message
