"""Running async code from sync code, in a plain script and inside a running event loop.

The sync API never needs this for sync models and sync tools (no loop, no thread). It is used only
when sync code must run an async-only piece (an async tool, an async-only model):

- no loop running in this thread: the coroutine runs on a per-thread event loop that is kept for
  reuse (no thread hop, no loop set-up per call);
- a loop is running in this thread (Jupyter, or sync code called from ``async def``): the coroutine
  runs on a private background loop in a daemon thread, so it works without nest-asyncio.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["in_running_loop", "iterate_sync", "run_sync"]

T = TypeVar("T")
U = TypeVar("U")

_local = threading.local()
_portal_lock = threading.Lock()
_portal_loop: asyncio.AbstractEventLoop | None = None


def in_running_loop() -> bool:
    """True when this thread is inside a running asyncio event loop.

    Without asyncio imported no loop can be running: a sync-only script never loads it.
    """
    asyncio = sys.modules.get("asyncio")
    # ``_get_running_loop`` (exported by asyncio for loop implementations) answers ``None`` where
    # ``get_running_loop`` raises: no exception raised and caught on every sync call.
    return asyncio is not None and asyncio._get_running_loop() is not None


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        import asyncio

        loop = asyncio.new_event_loop()
        _local.loop = loop
    return loop


def _start_portal(name: str) -> asyncio.AbstractEventLoop:
    import asyncio

    loop = asyncio.new_event_loop()

    def run() -> None:
        _local.on_portal = True
        try:
            loop.run_forever()
        finally:
            loop.close()

    threading.Thread(target=run, name=name, daemon=True).start()
    return loop


def _portal() -> tuple[asyncio.AbstractEventLoop, bool]:
    """The loop to run on from inside a running loop, and whether it is a temporary one.

    Sync code running *on* a portal (an async tool that calls the sync API) gets a temporary portal
    of its own: waiting on the shared one from its own thread would deadlock.
    """
    global _portal_loop
    if getattr(_local, "on_portal", False):
        return _start_portal("chatclient-portal-nested"), True
    with _portal_lock:
        if _portal_loop is None or _portal_loop.is_closed():
            _portal_loop = _start_portal("chatclient-portal")
        return _portal_loop, False


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run the awaitable made by ``factory`` to completion and return its result.

    ``factory`` is called on the loop that runs it, so objects bound to a loop are made there.
    """
    if not in_running_loop():
        return _thread_loop().run_until_complete(_await(factory))
    import asyncio

    loop, temporary = _portal()
    try:
        return asyncio.run_coroutine_threadsafe(_await(factory), loop).result()
    finally:
        if temporary:
            loop.call_soon_threadsafe(loop.stop)


async def _await(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


def iterate_sync(factory: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Drive an async iterator from sync code, one item at a time, on the loop ``run_sync`` picks.

    The whole iteration stays on that one loop, which async generators require.
    """
    use_portal = in_running_loop()
    loop, temporary = _portal() if use_portal else (_thread_loop(), False)

    def step(make: Callable[[], Awaitable[U]]) -> U:
        if use_portal:
            import asyncio

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
        if temporary:
            loop.call_soon_threadsafe(loop.stop)
