"""Sync work awaited from async code: the bridge for ``acall()`` and ``astream()`` over a sync
official SDK client.

One worker thread owns the sync iterator for its whole life: it pulls one event per request from
the loop (so the thread never reads ahead of the consumer) and is the only thread that ever runs or
closes the iterator. Stepping a generator in one thread while another closes it is what raised
``ValueError: generator already executing`` when an ``astream()`` was cancelled.

Cancelling (or closing) the async side aborts the HTTP stream the worker is blocked on: the stream's
opener registers its response with :func:`watch_response`, and the abort shuts its socket down,
which wakes the blocked read at once and tells the server the stream is closed. The worker then
closes the iterator (its ``finally`` closes the response) and ends; the caller gets its
``CancelledError`` without waiting for the server's next byte.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ._watchdog import Pending, shut_down

if TYPE_CHECKING:
    import asyncio

__all__ = ["Abandoned", "call_in_thread", "current_abort", "iterate_in_thread", "watch_response"]

T = TypeVar("T")

_STOP = object()
_END = object()
_local = threading.local()
_log = logging.getLogger("chatclient.providers")


class _Abort:
    """The exchange the worker thread is in (its response, or until that comes its pending send),
    and whether the reader has gone away."""

    __slots__ = ("_aborted", "_lock", "_pending", "_response")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._response: Any = None
        self._pending: Pending | None = None
        self._aborted = False

    def watch(self, response: Any) -> None:
        with self._lock:
            self._response = response
            aborted = self._aborted
        if aborted:  # the reader left while the request was being sent
            shut_down(response)

    def watch_pending(self, pending: Pending) -> None:
        """A request about to be sent, its response not yet come: what an abort cuts meanwhile.
        Raises :class:`Abandoned` once the reader has gone: a retry of the SDK's is not sent."""
        with self._lock:
            if self._aborted:
                raise Abandoned("the async caller was cancelled: the request is not sent")
            self._pending, self._response = pending, None

    def abort(self) -> None:
        with self._lock:
            self._aborted = True
            response, pending = self._response, self._pending
        if response is not None:
            shut_down(response)
        elif pending is not None:
            pending.abort()


class Abandoned(Exception):
    """Raised in a bridge's worker thread whose async caller has gone: nobody will read the result.
    Not an HTTP error, so no retry loop (the SDK's or ours) sends the request again."""


def current_abort() -> _Abort | None:
    """The abort of the bridged reader this thread works for, ``None`` outside the bridge."""
    abort: _Abort | None = getattr(_local, "abort", None)
    return abort


def watch_response(response: Any) -> None:
    """Register ``response`` as the stream this thread reads, so a bridged reader can abort it.

    Called by the SDK transports right after a stream is opened; a no-op outside the bridge.
    """
    abort: _Abort | None = getattr(_local, "abort", None)
    if abort is not None:
        abort.watch(response)


def _resolve(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the reader was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _work(make: Callable[[], Iterator[Any]], requests: queue.SimpleQueue[Any], abort: _Abort) -> None:
    _local.abort = abort
    events: Iterator[Any] | None = None
    try:
        while (future := requests.get()) is not _STOP:
            loop = future.get_loop()
            try:
                if events is None:
                    events = make()
                value, error = next(events, _END), None
            except BaseException as exc:  # handed to the reader, which raises it
                value, error = None, exc
            try:
                loop.call_soon_threadsafe(_resolve, future, value, error)
            except RuntimeError:  # the loop is closed: nobody reads any more
                return
            if error is not None or value is _END:
                return
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            try:
                close()  # in the thread that ran it: runs its ``finally`` (closing the response)
            except Exception:  # the reader is gone: nobody to raise it to
                _log.debug("closing an abandoned stream failed", exc_info=True)
        _local.abort = None


async def iterate_in_thread(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The events of ``make()`` (a sync iterator, built and run in a worker thread), one at a time.

    Cancelling the consumer, or closing this iterator early, aborts the HTTP stream being read and
    closes the sync iterator in its own thread.
    """
    import asyncio  # loaded when a sync SDK stream is first read from async code

    loop = asyncio.get_running_loop()
    requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
    abort = _Abort()
    worker = threading.Thread(target=_work, args=(make, requests, abort), name="chatclient-stream", daemon=True)
    worker.start()
    finished = False  # the worker ended by itself (end of stream, or an error it handed over)
    try:
        while True:
            future: asyncio.Future[Any] = loop.create_future()
            requests.put(future)
            try:
                value = await future
            except asyncio.CancelledError:
                raise
            except BaseException:
                finished = future.done() and not future.cancelled()
                raise
            if value is _END:
                finished = True
                return
            yield value
    finally:
        if not finished:
            abort.abort()
        requests.put(_STOP)


async def call_in_thread(call: Callable[[], T]) -> T:
    """``call()`` run in a worker thread (the loop's default executor, in the caller's context), as
    ``asyncio.to_thread`` does; but cancelling the caller also aborts the HTTP exchange the worker is
    in (registered by the SDK transport, :func:`current_abort`), so the thread ends at once and the
    connection is closed, rather than both being held until the reply has come in full."""
    import asyncio
    import contextvars

    abort = _Abort()
    context = contextvars.copy_context()

    def work() -> T:
        _local.abort = abort
        try:
            return context.run(call)
        finally:
            _local.abort = None

    try:
        return await asyncio.get_running_loop().run_in_executor(None, work)
    except asyncio.CancelledError:
        abort.abort()
        raise
