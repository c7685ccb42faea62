"""Turning whatever the caller passed as tools into one flat tuple of uniquely named callbacks.

Static tools (callbacks, ``@tool`` functions, objects with ``@tool`` methods) are resolved once,
when a client or a request spec is built. Dynamic sources (``ToolCallbackProvider``s, sync or
async) are kept aside and asked once per request, on the thread or event loop that runs it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias, Union

from ..errors import ConfigurationError, DuplicateToolNameError
from .callback import ToolCallback, ToolCallbackProvider

__all__ = ["ToolLike", "aresolve_providers", "resolve_providers", "resolve_tools", "split_tools"]

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
    """Flatten ``tools`` in order into callbacks; sync providers are asked for their tools now.

    Raises :class:`~chatclient.errors.DuplicateToolNameError` when two tools share a name. Callbacks
    pass through as they are, so resolving an already resolved tuple costs no schema work.
    """
    callbacks, providers = split_tools(tools)
    provided = resolve_providers(providers)
    return check_unique((*callbacks, *provided)) if provided else callbacks


def split_tools(tools: Iterable[ToolLike]) -> tuple[tuple[ToolCallback, ...], tuple[ToolCallbackProvider, ...]]:
    """The static tools, resolved and checked, and the providers to ask per request."""
    callbacks: list[ToolCallback] = []
    providers: list[ToolCallbackProvider] = []
    _collect(tools, callbacks, providers)
    return check_unique(callbacks), tuple(providers)


def _collect(tools: Iterable[ToolLike], out: list[ToolCallback], providers: list[ToolCallbackProvider]) -> None:
    from .decorator import spec_of, tool_callbacks_from  # the @tool machinery, loaded when tools are given

    for item in tools:
        if isinstance(item, ToolCallback):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            _collect(item, out, providers)
        elif spec_of(item) is None and _is_provider(item):
            providers.append(item)  # type: ignore[arg-type]  # _is_provider checked the shape
        else:
            out.extend(tool_callbacks_from(item))


def _is_provider(item: object) -> bool:
    """A ``ToolCallbackProvider``: an instance with a callable ``tool_callbacks`` (an attribute check,
    not a Protocol ``isinstance``, which is slow)."""
    return not isinstance(item, type) and callable(getattr(item, "tool_callbacks", None))


def resolve_providers(providers: Sequence[ToolCallbackProvider]) -> tuple[ToolCallback, ...]:
    """Sync path: ask each provider; an async one runs to completion on the sync bridge, unless it
    also has a sync ``get_tool_callbacks()`` (the thread-backed MCP provider), which is used instead."""
    if not providers:
        return ()
    callbacks: list[ToolCallback] = []
    for provider in providers:
        method: Any = provider.tool_callbacks
        sync_twin: Any = getattr(provider, "get_tool_callbacks", None)
        is_async = _is_async(method)
        if sync_twin is not None and is_async and callable(sync_twin):
            provided = sync_twin()  # the provider's own sync path: no loop run (or portal hop) per request
        elif is_async:
            provided = _run_sync()(method)
        else:
            provided = method()
            if inspect.isawaitable(provided):
                provided = _run_sync()(_returning(provided))
        callbacks.extend(_checked(provider, provided))
    return tuple(callbacks)


def _run_sync() -> Callable[[Callable[[], Any]], Any]:
    """The sync bridge, imported where a provider needs it: a provider with a sync twin (the
    thread-backed MCP one) runs no import statement per request."""
    from .._sync import run_sync

    return run_sync


def _is_async(method: Any) -> bool:
    """``inspect.iscoroutinefunction(method)``, decided once per function (it is asked per request)."""
    function = getattr(method, "__func__", None)
    return _is_async_function(function) if function is not None else inspect.iscoroutinefunction(method)


@functools.lru_cache(maxsize=1024)
def _is_async_function(function: Any) -> bool:
    return inspect.iscoroutinefunction(function)


def _returning(awaitable: Any) -> Any:
    return lambda: awaitable


async def aresolve_providers(providers: Sequence[ToolCallbackProvider]) -> tuple[ToolCallback, ...]:
    """Async path: async providers are awaited together; a sync one runs in a worker thread, so a
    slow source never blocks the event loop."""
    if not providers:
        return ()
    if len(providers) == 1:  # the common case: no task per provider (gather wraps each in one)
        return tuple(await _ask(providers[0]))
    import asyncio

    results = await asyncio.gather(*(_ask(p) for p in providers))
    return tuple(callback for provided in results for callback in provided)


async def _ask(provider: ToolCallbackProvider) -> Sequence[ToolCallback]:
    method: Any = provider.tool_callbacks
    if _is_async(method):
        provided = await method()
    else:
        import asyncio

        provided = await asyncio.to_thread(method)
        if inspect.isawaitable(provided):
            provided = await provided
    return _checked(provider, provided)


_last_checked: list[tuple[ToolCallback, ...]] = []
"""The last tuple a provider handed back that passed the check: a provider with a cached set (an
MCP provider) hands back the same tuple every request, and a tuple cannot change once checked."""


def _checked(provider: object, provided: Any) -> Sequence[ToolCallback]:
    last = _last_checked
    if last and provided is last[0]:
        same: Sequence[ToolCallback] = provided
        return same  # the tuple checked last time, unchanged
    if not isinstance(provided, (list, tuple)):
        raise ConfigurationError(
            f"{type(provider).__qualname__}.tool_callbacks() returned {type(provided).__name__}, "
            "not a list of ToolCallbacks"
        )
    for callback in provided:
        # A subclass is found in its MRO without the ABC's isinstance (a Python call per tool per request);
        # a class registered as a virtual subclass still passes through isinstance.
        if ToolCallback not in type(callback).__mro__ and not isinstance(callback, ToolCallback):
            raise ConfigurationError(
                f"{type(provider).__qualname__}.tool_callbacks() returned {callback!r}, not a ToolCallback"
            )
    checked: Sequence[ToolCallback] = provided
    if isinstance(checked, tuple):
        last[:] = (checked,)  # one slot, replaced whole (a racing thread at worst checks again)
    return checked


def check_unique(callbacks: Sequence[ToolCallback]) -> tuple[ToolCallback, ...]:
    """``callbacks`` as a tuple; ``DuplicateToolNameError`` when two share a name."""
    seen: set[str] = set()
    duplicates: dict[str, None] = {}
    for callback in callbacks:
        name = callback.name
        if name in seen:
            duplicates[name] = None
        seen.add(name)
    if duplicates:
        raise DuplicateToolNameError(list(duplicates))
    return tuple(callbacks)
