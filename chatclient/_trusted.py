"""Models built from values already checked, without validating them again: for the call path.

A reply becomes six or more pydantic models (``ChatResponse``, its metadata and usage, a
``Generation``, its metadata, the ``AssistantMessage``); validating each costs more than parsing the
reply's JSON, and pydantic's own ``model_construct`` is slower still (it walks every field in
Python). The provider mappings check what the wire could get wrong (a string where a string belongs,
counts that are ints), values that come from the JSON parser are JSON by construction, and the client
builds each request's ``Prompt`` from parts that are models already; validating the result again
proves nothing. :func:`trusted` sets the instance's state the way ``model_construct`` does, in four
steps; a model whose class does more than hold fields (validators, private attributes,
``model_post_init``) is validated as usual instead.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
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


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """``cls`` holding ``values`` (every field, each already of its declared type), not validated.

    ``values`` becomes the instance's ``__dict__``: pass a dict made for it. Every field must be
    given, so a field added to a model later cannot be left out silently: that raises ``TypeError``.
    """
    try:
        fields = _FIELDS[cls]
    except KeyError:
        fields = _FIELDS[cls] = _plain_fields(cls)
    if fields is None:
        return cls.model_validate(values)
    if values.keys() != fields:
        missing, unknown = sorted(fields - values.keys()), sorted(values.keys() - fields)
        raise TypeError(f"trusted({cls.__name__}): missing fields {missing}, unknown fields {unknown}")
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
