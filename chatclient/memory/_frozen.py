"""Read-only twins of messages, so one decoded copy can serve every reader of a conversation.

Messages are frozen pydantic models, but their containers are not: ``metadata`` dicts, JSON values
(lists, dicts) in metadata and in ``JsonPart``. The decode cache hands the same message to every
reader in the process, so a reader that mutated one of those containers would change what every
later turn reads (and the history would no longer be what the log stores). A twin holds the same
values in containers that refuse mutation: it compares equal to the original, serialises to the
same JSON, ``dict(...)``/``list(...)``/``copy.deepcopy`` give ordinary mutable copies, and the twin
costs nothing to hand out (it is built once, when a message enters the cache).
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel

from .._readonly import ReadOnlyDict
from .._trusted import set_extra, set_fields_set, set_private

__all__ = ["FrozenList", "frozen"]

T = TypeVar("T")

_HINT = (
    "this message is shared by every reader of the conversation's history and is read-only; "
    "copy it first (message.model_copy(deep=True), or dict(message.metadata))"
)


def _refuse(*_: object, **__: object) -> NoReturn:
    raise TypeError(f"Cannot modify: {_HINT}")


class FrozenList(list[Any]):
    """A ``list`` that refuses every change (equal to, and serialised as, the plain list)."""

    __slots__ = ()

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]


_ATOMS = frozenset({str, int, float, bool, type(None), ReadOnlyDict, FrozenList})
_EMPTY = ReadOnlyDict()
_new = object.__new__
_set_dict = object.__setattr__


def frozen(value: T) -> T:
    """``value`` with every container in it read-only: pydantic models are twinned (the original is
    never changed), dicts and lists become :class:`ReadOnlyDict`/:class:`FrozenList`, tuples are
    rebuilt only when something in them changed; strings, numbers and frozen containers are kept."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return _frozen_dict(value)  # type: ignore[arg-type,return-value]
    names = _CONTAINERS.get(kind, _UNSEEN)  # before isinstance: BaseModel's is an ABC check, and slow
    if names is not _UNSEEN or isinstance(value, BaseModel):
        return _twin(value, names)  # type: ignore[arg-type,return-value]
    if isinstance(value, dict):
        return _frozen_dict(value)  # type: ignore[return-value]
    if isinstance(value, list):
        return FrozenList([frozen(v) for v in value])  # type: ignore[return-value]
    if isinstance(value, tuple):
        items = tuple(frozen(v) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items  # type: ignore[return-value]
    return value


def _frozen_dict(value: dict[Any, Any]) -> ReadOnlyDict:
    if not value:
        return _EMPTY
    for v in value.values():
        if type(v) not in _ATOMS:
            return ReadOnlyDict({k: frozen(v) for k, v in value.items()})
    return ReadOnlyDict(value)


def _containers(kind: type[BaseModel]) -> tuple[str, ...] | None:
    """The fields of a message class that can hold a mutable container (``None``: any may)."""
    from ..messages import AssistantMessage, SystemMessage, ToolResponseMessage, UserMessage

    # Media parts and tool calls hold only strings (frozen models); metadata and tool responses do not.
    known: dict[type[BaseModel], tuple[str, ...]] = {
        SystemMessage: ("metadata",),
        UserMessage: ("metadata",),
        AssistantMessage: ("metadata",),
        ToolResponseMessage: ("metadata", "responses"),
    }
    return known.get(kind)


_CONTAINERS: dict[type[Any], tuple[str, ...] | None] = {}
_UNSEEN = ("",)


def _twin(model: BaseModel, names: tuple[str, ...] | None) -> BaseModel:
    """A copy of ``model`` with frozen containers, built without validation (the values are the
    model's own, already valid); the model itself when nothing in it is mutable (a ``ToolCall``).
    ``names``: the fields that can hold a container (``None``: any may; ``_UNSEEN``: not known yet)."""
    kind = type(model)
    if names is _UNSEEN:
        names = _CONTAINERS[kind] = _containers(kind)
    fields = model.__dict__
    if names is None:
        values = {name: frozen(value) for name, value in fields.items()}
        if all(values[name] is value for name, value in fields.items()):
            return model
    else:
        values = fields.copy()
        for name in names:
            value = fields[name]
            values[name] = _EMPTY if type(value) is dict and not value else frozen(value)
    twin = _new(kind)
    _set_dict(twin, "__dict__", values)
    set_fields_set(twin, model.__pydantic_fields_set__)  # never changed: the model is frozen
    set_extra(twin, model.__pydantic_extra__)
    set_private(twin, model.__pydantic_private__)
    return twin
