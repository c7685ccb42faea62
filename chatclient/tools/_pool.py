"""The threads that run sync tool calls, and what becomes of a call nobody waits for any more.

Python cannot stop a thread. A sync tool call whose request's deadline passed (or whose caller was
cancelled) is therefore *abandoned*: it runs on, but its thread stops counting against the pool's
capacity and another thread takes its place, so a family of hung tools cannot starve other requests.

The capacity rule: at most ``workers`` calls run at once; every abandoned call still running is
replaced by a new thread, up to ``max_abandoned`` abandoned threads. While that many are still
running, new calls are refused at once (``ToolPoolExhaustedError``, naming the bound), never queued
behind hung ones; they are accepted again as soon as an abandoned call returns. So the pool never
holds more than ``workers + max_abandoned`` threads. Its threads are daemons: a hung call never
keeps the process from exiting.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["ToolPoolExhaustedError", "ToolThreadPool"]

_log = logging.getLogger("chatclient.tools")


class ToolPoolExhaustedError(RuntimeError):
    """Too many abandoned sync tool calls are still running: a new one is refused, not queued.

    Not a ``ChatClientError``: it fails one tool call, like an error of the tool itself, so the loop
    tells the model (``DefaultToolExceptionProcessor(rethrow=(ToolPoolExhaustedError,))`` aborts instead)."""


class _Job(Future[Any]):
    """A call and its future; ``finished`` and ``abandoned`` are read and written under the pool's lock."""

    def __init__(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], ends: float | None = None
    ) -> None:
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.ends = ends
        """The ``time.monotonic()`` after which the call must not start (its deadline passed)."""
        self.finished = False
        self.abandoned = False
        self.on_late: Callable[[], None] | None = None


class ToolThreadPool(Executor):
    """An executor for sync tool calls whose abandoned calls are replaced (see the module's docstring)."""

    def __init__(self, workers: int, max_abandoned: int, name: str = "chatclient-tool") -> None:
        if workers < 1 or max_abandoned < 0:
            raise ValueError(f"a tool pool needs workers >= 1 and max_abandoned >= 0, not {workers}, {max_abandoned}")
        self.workers = workers
        self.max_abandoned = max_abandoned
        self._name = name
        self._lock = threading.Lock()
        self._work_ready = threading.Condition(self._lock)
        self._queue: deque[_Job] = deque()
        self._live = 0
        """Threads serving the queue (running a call or idle); abandoned ones are not counted."""
        self._idle = 0
        self._abandoned = 0
        """Threads still running an abandoned call."""
        self._started = 0
        self._shut = False

    @property
    def abandoned(self) -> int:
        """How many abandoned calls are still running."""
        return self._abandoned

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self.submit_until(None, fn, *args, **kwargs)

    def submit_until(self, ends: float | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """As :meth:`submit`; a call still queued at ``ends`` (a ``time.monotonic()``) is cancelled,
        never started late: a thread freed by an abandoned call must not run the calls of the same
        expired batch before their own abandonment reaches them."""
        job = _Job(fn, args, kwargs, ends)
        with self._lock:
            if self._shut:
                raise RuntimeError("the tool pool is shut down")
            if self._abandoned >= self.max_abandoned:
                raise ToolPoolExhaustedError(
                    f"{self._abandoned} abandoned sync tool calls are still running, the bound of the tool "
                    f"pool (max_abandoned={self.max_abandoned}); new sync tool calls are refused until one "
                    "of them returns (a tool that hangs needs a timeout of its own)"
                )
            self._queue.append(job)
            if not self._start_thread_if_needed():
                self._work_ready.notify()
        return job

    def abandon(self, future: Future[Any], on_late: Callable[[], None] | None = None) -> bool:
        """Stop waiting for ``future``'s call. Not started yet, it is cancelled and never runs (``False``);
        running, it runs on, a new thread takes its place, and ``on_late`` is called when it returns
        (``True``). Already finished: nothing to do (``False``)."""
        if not isinstance(future, _Job):
            raise TypeError("not a future of this pool")
        with self._lock:
            if future.finished:
                return False
            if future.cancel():  # still queued (or just taken, and its thread will skip it)
                with contextlib.suppress(ValueError):
                    self._queue.remove(future)
                return False
            future.abandoned, future.on_late = True, on_late
            self._live -= 1
            self._abandoned += 1
            self._start_thread_if_needed()
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Idle threads end; a call still running ends its thread when it returns. ``wait`` is not
        honoured for running calls: an abandoned one may never return."""
        with self._lock:
            self._shut = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft().cancel()
            self._work_ready.notify_all()

    def _start_thread_if_needed(self) -> bool:
        """Start a thread when more calls wait than idle threads can take, within the bounds (lock held)."""
        if len(self._queue) <= self._idle or self._live >= self.workers:
            return False
        if self._live + self._abandoned >= self.workers + self.max_abandoned:
            return False
        self._live += 1
        self._started += 1
        threading.Thread(target=self._serve, name=f"{self._name}_{self._started}", daemon=True).start()
        return True

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    if self._shut:
                        self._live -= 1
                        return
                    self._idle += 1
                    self._work_ready.wait()
                    self._idle -= 1
                job = self._queue.popleft()
            if job.ends is not None and job.ends <= time.monotonic():
                job.cancel()
            if job.set_running_or_notify_cancel() and self._run(job):
                return

    def _run(self, job: _Job) -> bool:
        """Run one call; ``True`` when this thread should end (its call was abandoned and its place taken)."""
        try:
            result = job.fn(*job.args, **job.kwargs)
        except BaseException as exc:  # handed to the future, as ThreadPoolExecutor does
            self._finish(job)
            job.set_exception(exc)
        else:
            self._finish(job)
            job.set_result(result)
        if not job.abandoned:
            return False
        with self._lock:
            self._abandoned -= 1
            done = self._live >= self.workers or self._shut
            if not done:
                self._live += 1  # no thread took its place yet: it serves the queue again
        if job.on_late is not None:
            try:
                job.on_late()
            except Exception:
                _log.exception("Reporting a late tool result failed")
        return done

    def _finish(self, job: _Job) -> None:
        with self._lock:
            job.finished = True
