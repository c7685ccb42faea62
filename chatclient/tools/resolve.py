"""Turning whatever the caller passed as tools into one flat tuple of uniquely named callbacks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias, Union

from ..errors import ConfigurationError, DuplicateToolNameError
from .callback import ToolCallback, ToolCallbackProvider
from .decorator import tool_callbacks_from

__all__ = ["ToolLike", "resolve_tools"]

ToolLike: TypeAlias = Union[
    ToolCallback,
    ToolCallbackProvider,
    Callable[..., Any],
    "Sequence[ToolLike]",
    object,
]
"""A ``ToolCallback``, a ``ToolCallbackProvider``, a ``@tool`` function, an object whose class has
``@tool`` methods, or a (nested) list or tuple of these. (Any object may have ``@tool`` methods, so
the type admits ``object``; :func:`resolve_tools` checks at run time.)"""


def resolve_tools(tools: Iterable[ToolLike]) -> tuple[ToolCallback, ...]:
    """Flatten ``tools`` in order into callbacks; providers are asked for their tools now.

    Raises :class:`~chatclient.errors.DuplicateToolNameError` when two tools share a name. Callbacks
    pass through as they are, so resolving an already resolved tuple per request costs no schema work.
    """
    callbacks: list[ToolCallback] = []
    _collect(tools, callbacks)
    _check_unique_names(callbacks)
    return tuple(callbacks)


def _collect(tools: Iterable[ToolLike], out: list[ToolCallback]) -> None:
    for item in tools:
        if isinstance(item, ToolCallback):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            _collect(item, out)
        elif isinstance(item, ToolCallbackProvider) and not isinstance(item, type):
            out.extend(_provided(item))
        else:
            out.extend(tool_callbacks_from(item))


def _provided(provider: ToolCallbackProvider) -> Sequence[ToolCallback]:
    callbacks = provider.tool_callbacks()
    for callback in callbacks:
        if not isinstance(callback, ToolCallback):
            raise ConfigurationError(
                f"{type(provider).__qualname__}.tool_callbacks() returned {callback!r}, not a ToolCallback"
            )
    return callbacks


def _check_unique_names(callbacks: list[ToolCallback]) -> None:
    seen: set[str] = set()
    duplicates: dict[str, None] = {}
    for callback in callbacks:
        name = callback.name
        if name in seen:
            duplicates[name] = None
        seen.add(name)
    if duplicates:
        raise DuplicateToolNameError(list(duplicates))
