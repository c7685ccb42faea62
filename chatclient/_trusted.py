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

Two forms:

- :func:`trusted` ``(cls, values)``: any call site; checks that ``values`` names every field.
- a builder checked by :func:`builds` (``chatclient._builders``): a function taking each field as a
  keyword argument, for the models every call and reply makes. Python's own argument binding is
  then the field check (a missing or unknown field is a ``TypeError`` at the call), so a build checks
  nothing more, and pays no call to :func:`trusted`, no class lookup and no key comparison.

Both set the four slots through their descriptors (``__set__`` of ``BaseModel``'s own slots), not
``object.__setattr__``, which looks each name up through the class and checks the call again on
every set: ~0.7 k instructions fewer per model (5.3 k per call of eight builds, callgrind).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["builds", "new", "set_dict", "set_extra", "set_fields_set", "set_private", "trusted"]

M = TypeVar("M", bound=BaseModel)
B = TypeVar("B", bound=Callable[..., Any])

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


def builds(cls: type[M]) -> Callable[[B], B]:
    """Check, once when it is defined, a builder of ``cls`` written for one hot call site.

    A builder takes every field as a keyword-only argument and sets the slots itself with
    :data:`new`, :data:`set_dict`, :data:`set_fields_set`, :data:`set_extra`, :data:`set_private`:
    the signature is then the per-build check (a missing or unknown field is a ``TypeError`` at the
    call), and this decorator the check of the builder: it takes exactly the class's fields, the class
    holds nothing but fields, and a probe build (each field given its own name as value) holds each
    value under its own field, with the fields set and the empty slots of a ``model_construct``.
    """

    def check(build: B) -> B:
        fields = _fields_of(cls)
        code = build.__code__
        names = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
        if fields is None or code.co_argcount or set(names) != fields or len(names) != len(fields):
            raise TypeError(f"{build.__name__} cannot build {cls.__name__}: its fields are {sorted(cls.model_fields)}")
        probe = build(**{name: name for name in names})
        if (
            type(probe) is not cls
            or probe.__dict__ != {name: name for name in cls.model_fields}
            or list(probe.__dict__) != list(cls.model_fields)
            or probe.__pydantic_fields_set__ != fields
            or probe.__pydantic_extra__ is not None
            or probe.__pydantic_private__ is not None
        ):
            raise TypeError(f"{build.__name__} does not build {cls.__name__} field by field")
        return build

    return check


new = _new
set_dict = _set_dict
set_fields_set = _set_fields_set
set_extra = _set_extra
set_private = _set_private
