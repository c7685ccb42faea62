"""Running async code from sync code, in a plain script and inside a running event loop.

The sync API never needs this for sync models and sync tools (no loop, no thread). It is used only
when sync code must run an async-only piece (an async tool, an async-only model):

- no loop running in this thread: the coroutine runs on a per-thread event loop that is kept for
  reuse (no thread hop, no loop set-up per call);
- a loop is running in this thread (Jupyter, or sync code called from ``async def``): the coroutine
  runs on a private background loop in a daemon thread, so it works without nest-asyncio.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

__all__ = ["in_running_loop", "iterate_sync", "run_sync"]

T = TypeVar("T")
U = TypeVar("U")

_local = threading.local()
_portal_lock = threading.Lock()
_portal_loop: asyncio.AbstractEventLoop | None = None


def in_running_loop() -> bool:
    """True when this thread is inside a running asyncio event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
    return loop


def _portal() -> asyncio.AbstractEventLoop:
    global _portal_loop
    with _portal_lock:
        if _portal_loop is None or _portal_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="chatclient-portal", daemon=True)
            thread.start()
            _portal_loop = loop
        return _portal_loop


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable made by ``factory`` to completion and return its result.

    ``factory`` is called on the loop that runs it, so objects bound to a loop are made there.
    """
    if not in_running_loop():
        return _thread_loop().run_until_complete(_await(factory))
    return asyncio.run_coroutine_threadsafe(_await(factory), _portal()).result()


async def _await(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


def iterate_sync(factory: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Drive an async iterator from sync code, one item at a time, on the loop ``run_sync`` picks.

    The whole iteration stays on that one loop, which async generators require.
    """
    use_portal = in_running_loop()
    loop = _portal() if use_portal else _thread_loop()

    def step(make: Callable[[], Awaitable[U]]) -> U:
        if use_portal:
            return asyncio.run_coroutine_threadsafe(_await(make), loop).result()
        return loop.run_until_complete(_await(make))

    async def start() -> AsyncIterator[T]:
        return factory()

    iterator = step(start)
    try:
        while True:
            try:
                yield step(iterator.__anext__)
            except StopAsyncIteration:
                return
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            step(aclose)
