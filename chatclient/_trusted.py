"""Values built from parts already checked, without checking them again: for the call path.

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
- :func:`fast_frozen`: a frozen, slotted dataclass's ``__init__`` without ``object.__setattr__``.

Each sets slots through their descriptors (``__set__`` of the slot itself), not
``object.__setattr__``, which looks each name up through the class and checks the call again on
every set. What that is worth is measured in ``benchmarks/results/2026-12-06-speed-notes.md``.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["builder_for", "fast_frozen", "set_extra", "set_fields_set", "set_private", "trusted"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

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
    if _fields_of(cls) is None:
        raise TypeError(f"no builder for {cls.__name__}: it does more than hold fields, so it must be validated")
    names = tuple(cls.model_fields)  # declaration order: the order of a validated model's __dict__
    name = f"build_{cls.__name__}"
    source = (
        f"def {name}(*, {', '.join(names)}):\n"
        "    _model = _new(_cls)\n"
        f"    _set_dict(_model, {{{', '.join(f'{field!r}: {field}' for field in names)}}})\n"
        f"    _set_fields_set(_model, {{{', '.join(map(repr, names))}}})\n"
        "    _set_extra(_model, None)\n"
        "    _set_private(_model, None)\n"
        "    return _model\n"
    )
    scope = {"_cls": cls, "_new": _new, "_set_dict": _set_dict, "_set_fields_set": _set_fields_set,
             "_set_extra": _set_extra, "_set_private": _set_private}  # fmt: skip
    build: Callable[..., M] = _compile(source, name, scope, owner=cls, names=names)
    build.__doc__ = f"A {cls.__name__} holding these values (every field, each of its type), not validated."
    return build


def fast_frozen(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass an ``__init__`` that sets each slot through its descriptor.

    Use it above ``@dataclass(frozen=True, slots=True)``, for a class made on every call or round. A
    frozen dataclass's own ``__init__`` must get past the class's refusing ``__setattr__``, so it sets
    each field with ``object.__setattr__``; this one calls each slot's own ``__set__``. It takes the
    same parameters, in the same order, with the same defaults, with one addition: a field with a
    ``default_factory`` also takes ``None`` for "make the default" (what a request's ``context`` has
    always taken). Anything else a dataclass ``__init__`` can do (``__post_init__``, ``InitVar``,
    ``init=False`` or keyword-only fields) is refused here rather than half done.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"@fast_frozen needs a @dataclass(frozen=True, slots=True) class, not {cls.__name__}")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        hasattr(cls, "__post_init__")
        or len(fields) != len(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        or not all(f.init and not f.kw_only for f in fields)
    ):
        raise TypeError(f"@fast_frozen cannot make {cls.__name__}'s __init__: {_UNSUPPORTED}")
    scope: dict[str, Any] = {}
    params_source, sets = [], []
    for f in fields:
        scope[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        value = f.name
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{f.name}"] = f.default
            params_source.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params_source.append(f"{f.name}=None")
            value = f"_factory_{f.name}() if {f.name} is None else {f.name}"
        else:
            params_source.append(f.name)
        sets.append(f"    _set_{f.name}(_self, {value})\n")
    source = f"def __init__(_self, {', '.join(params_source)}):\n{''.join(sets)}"
    names = tuple(f.name for f in fields)
    init = _compile(source, "__init__", scope, owner=cls, names=names)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)  # the dataclass's own, for signatures
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


_UNSUPPORTED = "it has a __post_init__, an InitVar, or a field with init=False or kw_only"


def _compile(source: str, name: str, scope: dict[str, Any], *, owner: type, names: tuple[str, ...]) -> Any:
    """The function ``name`` defined by ``source`` in ``scope``, for ``owner`` whose fields are ``names``."""
    if not all(field.isidentifier() and not keyword.iskeyword(field) and field[0] != "_" for field in names):
        raise TypeError(f"cannot generate code for {owner.__name__}: its field names are not all plain names: {names}")
    exec(compile(source, f"<{name} of {owner.__qualname__}>", "exec"), scope)  # source made from field names only
    function = scope[name]
    function.__module__ = owner.__module__
    return function


set_fields_set = _set_fields_set
set_extra = _set_extra
set_private = _set_private
