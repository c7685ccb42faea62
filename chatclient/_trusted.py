"""Models built from values already checked, without validating them again: for the call path.

A reply becomes six or more pydantic models (``ChatResponse``, its metadata and usage, a
``Generation``, its metadata, the ``AssistantMessage``); validating each costs more than parsing the
reply's JSON, and pydantic's own ``model_construct`` is slower still (it walks every field in
Python). The provider mappings check what the wire could get wrong (a string where a string belongs,
counts that are ints), values that come from the JSON parser are JSON by construction, and the client
builds each request's ``Prompt`` from parts that are models already; validating the result again
proves nothing. An instance's state is set the way ``model_construct`` sets it (its ``__dict__``,
its fields set, no extra, no private values); a model whose class does more than hold fields
(validators, private attributes, ``model_post_init``) is validated as usual instead.

- :func:`trusted` ``(cls, values)``: any call site; checks that ``values`` names every field.
- :func:`builder_for` ``(cls)``: a function taking each field as a keyword argument, for the models
  every call and reply makes (``chatclient._builders``).

Both set the four slots through their descriptors (``__set__`` of ``BaseModel``'s own slots), not
``object.__setattr__``, which looks each name up through the class and checks the call again on
every set. What that is worth is measured in ``benchmarks/results/2026-12-06-speed-notes.md``.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["builder_for", "set_extra", "set_fields_set", "set_private", "trusted"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_slots = BaseModel.__dict__
_set_dict = _slots["__dict__"].__set__
_set_fields_set = _slots["__pydantic_fields_set__"].__set__
_set_extra = _slots["__pydantic_extra__"].__set__
_set_private = _slots["__pydantic_private__"].__set__
_FIELDS: dict[type[BaseModel], frozenset[str] | None] = {}
"""Per class: its field names, or ``None`` when it must be validated (it does more than hold fields)."""


def _plain_fields(cls: type[BaseModel]) -> frozenset[str] | None:
    decorators = cls.__pydantic_decorators__
    if (
        cls.__private_attributes__
        or cls.__pydantic_post_init__
        or cls.__pydantic_root_model__
        or cls.model_config.get("extra") == "allow"
        or decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
    ):
        return None
    return frozenset(cls.model_fields)


def _fields_of(cls: type[BaseModel]) -> frozenset[str] | None:
    try:
        return _FIELDS[cls]
    except KeyError:
        fields = _FIELDS[cls] = _plain_fields(cls)
        return fields


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """``cls`` holding ``values`` (every field, each already of its declared type), not validated.

    ``values`` becomes the instance's ``__dict__``: pass a dict made for it. Every field must be
    given, so a field added to a model later cannot be left out silently: that raises ``TypeError``.
    """
    fields = _fields_of(cls)
    if fields is None:
        return cls.model_validate(values)
    if values.keys() != fields:
        missing, unknown = sorted(fields - values.keys()), sorted(values.keys() - fields)
        raise TypeError(f"trusted({cls.__name__}): missing fields {missing}, unknown fields {unknown}")
    model = _new(cls)
    _set_dict(model, values)
    _set_fields_set(model, set(values))
    _set_extra(model, None)
    _set_private(model, None)
    return model


def builder_for(cls: type[M]) -> Callable[..., M]:
    """A builder of ``cls``: a function taking each field as a keyword-only argument, made once.

    Python's own argument binding is the per-build check (a missing or unknown field is a
    ``TypeError`` at the call), so a build checks nothing more: no call to :func:`trusted`, no class
    lookup, no key comparison. The values must already be of their fields' types. The function is
    compiled from a few lines of source, as ``dataclasses`` makes an ``__init__``: a generic
    ``**values`` function would build a dict per call and compare its keys, which is the work a
    builder exists to skip. Its own names start with an underscore, which no pydantic field can.
    """
    names = tuple(cls.model_fields)  # declaration order: the order of a validated model's __dict__
    if _fields_of(cls) is None:
        raise TypeError(f"no builder for {cls.__name__}: it does more than hold fields, so it must be validated")
    if not all(name.isidentifier() and not keyword.iskeyword(name) for name in names):
        raise TypeError(f"no builder for {cls.__name__}: its field names are not all Python names: {names}")
    source = (
        f"def build(*, {', '.join(names)}):\n"
        "    _model = _new(_cls)\n"
        f"    _set_dict(_model, {{{', '.join(f'{name!r}: {name}' for name in names)}}})\n"
        f"    _set_fields_set(_model, {{{', '.join(map(repr, names))}}})\n"
        "    _set_extra(_model, None)\n"
        "    _set_private(_model, None)\n"
        "    return _model\n"
    )
    scope = {"_cls": cls, "_new": _new, "_set_dict": _set_dict, "_set_fields_set": _set_fields_set,
             "_set_extra": _set_extra, "_set_private": _set_private}  # fmt: skip
    exec(compile(source, f"<builder of {cls.__qualname__}>", "exec"), scope)  # source made from field names only
    build: Callable[..., M] = scope["build"]
    build.__name__ = build.__qualname__ = f"build_{cls.__name__}"
    build.__module__ = cls.__module__
    build.__doc__ = f"A {cls.__name__} holding these values (every field, each of its type), not validated."
    return build


set_fields_set = _set_fields_set
set_extra = _set_extra
set_private = _set_private
