"""Running the tool calls of one reply concurrently, results in the reply's order.

Every call runs to completion and its outcome (a result or the exception it raised) is collected, so
what is done with a failure is decided after the whole batch has finished: no thread is left running
behind an exception.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._sync import run_sync
from ..messages import ToolCall, ToolResult
from ..observation import NO_OBSERVERS, Observers, ToolInvocationInfo
from ._results import convert_result, tool_execution_error
from .callback import ToolCallback
from .definition import ToolContext

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future, ThreadPoolExecutor

__all__ = ["Invocation", "Outcome", "arun_all", "run_all", "tool_execution_error"]

Outcome: TypeAlias = str | ToolResult | Exception
"""A tool's result (text or structured), or what the call raised."""

T = TypeVar("T")

_POOL_WORKERS = 64

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(slots=True)
class Invocation:
    """One call to run: the tool, its arguments (blank already turned into ``{}``) and the request's context.

    What a callback returns is checked here, not trusted from its type: a hand-written callback that
    returns ``None`` (a tool run for its effect) or an object gets the same treatment as a function
    tool, through the default result converter. With observers, each run is reported to them.
    Not changed once made (not frozen: a frozen dataclass pays an ``object.__setattr__`` per field,
    per call of every round).
    """

    callback: ToolCallback
    arguments: str
    context: ToolContext
    call: ToolCall | None = None
    observers: Observers = NO_OBSERVERS

    def run(self) -> Outcome:
        if self.observers:
            return self._observed(self._run)
        return self._run()

    def _run(self) -> Outcome:
        try:
            value = self.callback.call(self.arguments, self.context)
            return value if type(value) is str else convert_result(self.callback.name, value)
        except Exception as exc:
            return exc

    async def arun(self, observed: bool = True) -> Outcome:
        """The call's outcome; reported to the observers unless ``observed`` is false (the body is
        here, not in a coroutine of its own: one coroutine frame less a call)."""
        if observed and self.observers:
            info, tokens, started = self._start()
            outcome = await self.arun(observed=False)
            self._finish(info, tokens, started, outcome)
            return outcome
        try:
            if self.callback.is_async:
                value = await self.callback.acall(self.arguments, self.context)
            else:
                value = await off_the_loop(self.callback.call, self.arguments, self.context)
            return value if type(value) is str else convert_result(self.callback.name, value)  # a text needs nothing
        except Exception as exc:
            return exc

    def _observed(self, run: Callable[[], Outcome]) -> Outcome:
        info, tokens, started = self._start()
        outcome = run()
        self._finish(info, tokens, started, outcome)
        return outcome

    def _start(self) -> tuple[ToolInvocationInfo, list[object], float]:
        call = self.call or ToolCall(id="", name=self.callback.name, arguments=self.arguments)
        info = ToolInvocationInfo(call, self.arguments)
        return info, self.observers.tool_started(info), time.perf_counter()

    def _finish(self, info: ToolInvocationInfo, tokens: list[object], started: float, outcome: Outcome) -> None:
        duration = time.perf_counter() - started
        if isinstance(outcome, Exception):
            self.observers.tool_finished(tokens, info, None, outcome, duration)
        else:
            self.observers.tool_finished(tokens, info, outcome, None, duration)


async def off_the_loop(fn: Callable[..., T], *args: object) -> T:
    """Run a sync ``fn`` in a worker thread of the shared pool, so it never blocks the event loop
    (a sync tool may block for as long as it likes; the loop goes on serving its other tasks).

    The worker settles the caller's future itself, with one ``call_soon_threadsafe`` (no
    ``wrap_future`` chain of two futures and their callbacks); a caller cancelled before the call
    started cancels it, as ``wrap_future`` would."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the caller, as a concurrent future would
            _settle_soon(loop, future.set_exception, future, exc)
        else:
            _settle_soon(loop, future.set_result, future, result)

    started = _default_pool().submit(work)
    try:
        return await future
    except asyncio.CancelledError:
        started.cancel()  # not started yet: it never runs
        raise


def _settle_soon(loop: Any, settle: Callable[[Any], None], future: Any, value: object) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed while the call ran: nobody waits for it
        loop.call_soon_threadsafe(_settle, settle, future, value)


def _settle(settle: Callable[[Any], None], future: Any, value: object) -> None:
    if not future.done():  # a cancelled caller's future stays cancelled
        settle(value)


def _default_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=_POOL_WORKERS, thread_name_prefix="chatclient-tool")
        return _pool


def run_all(invocations: Sequence[Invocation], executor: Executor | None = None) -> list[Outcome]:
    """Sync path: sync tools on the pool, async tools together on one event loop.

    The calling thread does one share of the work itself (the async group, or else the first sync
    call), so a batch of one sync call costs no thread hop.
    """
    async_ix: list[int] = []
    sync_ix: list[int] = []
    for i, inv in enumerate(invocations):  # ``is_async`` asked once a call: an MCP tool's asks for a running loop
        (async_ix if inv.callback.is_async else sync_ix).append(i)
    inline_ix = [] if async_ix else sync_ix[:1]
    pooled_ix = sync_ix[len(inline_ix) :]
    outcomes: dict[int, Outcome] = {}
    futures: dict[int, Future[Outcome]] = {}
    if pooled_ix:
        pool = executor or _default_pool()
        for i in pooled_ix:
            # Each call gets its own copy of the caller's context (tracing, request-scoped vars).
            futures[i] = pool.submit(contextvars.copy_context().run, invocations[i].run)
    try:
        for i in inline_ix:
            outcomes[i] = invocations[i].run()
        if async_ix:
            group = [invocations[i] for i in async_ix]
            outcomes.update(zip(async_ix, run_sync(lambda: arun_all(group)), strict=True))
    except BaseException:
        from concurrent.futures import wait

        for future in futures.values():
            future.cancel()
        wait(futures.values())
        raise
    for i, future in futures.items():
        outcomes[i] = future.result()
    return [outcomes[i] for i in range(len(invocations))]


async def arun_all(invocations: Sequence[Invocation]) -> list[Outcome]:
    """Async path: every call as a task (sync tools in a worker thread); cancelled together. A lone
    call is simply awaited: no task to schedule."""
    if len(invocations) == 1:
        return [await invocations[0].arun()]
    import asyncio

    tasks = [asyncio.ensure_future(inv.arun()) for inv in invocations]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
