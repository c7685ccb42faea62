"""Running the tool calls of one reply concurrently, results in the reply's order.

Every call runs to completion and its outcome (a result or the exception it raised) is collected, so
what is done with a failure is decided after the whole batch has finished: no thread is left running
behind an exception.

With a deadline (``timeout``: the request's, see ``ToolCallingManager``; or a call's own ``limit``:
its tool's timeout) a call still running when it passes is abandoned: its outcome is a
``ToolExecutionError`` whose ``__cause__`` is a ``TimeoutError``, an async tool is cancelled, and a
sync tool's thread runs on outside the pool's capacity (``_pool``); whatever it returns later is
discarded and logged. Each call is abandoned at its own deadline, not at the batch's last one.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._sync import run_sync
from ..errors import ToolExecutionError
from ..messages import ToolCall, ToolResult
from ..observation import NO_OBSERVERS, Observers, ToolInvocationInfo
from ._results import convert_result, tool_execution_error
from .callback import ToolCallback
from .definition import ToolContext

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from ._pool import ToolThreadPool

__all__ = ["Invocation", "Outcome", "arun_all", "run_all", "tool_execution_error"]

_log = logging.getLogger("chatclient.tools")

Outcome: TypeAlias = str | ToolResult | Exception
"""A tool's result (text or structured), or what the call raised."""

T = TypeVar("T")

_POOL_WORKERS = 64
"""Sync tool calls that run at once in the shared pool; more wait for a thread."""
_MAX_ABANDONED = 256
"""Abandoned sync tool calls still running that the shared pool replaces; at the bound new sync tool
calls are refused at once (see ``_pool``)."""

_pool: ToolThreadPool | None = None
_pool_lock = threading.Lock()


@dataclass(slots=True)
class Invocation:
    """One call to run: the tool, its arguments (blank already turned into ``{}``) and the request's context.

    What a callback returns is checked here, not trusted from its type: a hand-written callback that
    returns ``None`` (a tool run for its effect) or an object gets the same treatment as a function
    tool, through the default result converter. With observers, each run is reported to them.
    Not changed once made, but for ``ends``, which a runner with a deadline sets before the call
    starts (not frozen: a frozen dataclass pays an ``object.__setattr__`` per field, per call of every
    round).
    """

    callback: ToolCallback
    arguments: str
    context: ToolContext
    call: ToolCall | None = None
    observers: Observers = NO_OBSERVERS
    ends: float | None = None
    """The ``time.monotonic()`` of this call's deadline, set by the runner before the call starts: a
    sync call still queued then never starts."""
    limit: float | None = None
    """Seconds this call may run when its tool has a timeout of its own (already capped by the
    request's); ``None``: the batch's ``timeout`` applies."""

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
            try:
                outcome = await self.arun(observed=False)
            except BaseException:  # cancelled: abandoned at a deadline, or its request was cancelled
                self._finish(info, tokens, started, TimeoutError(f"{self.describe()} was cancelled"))
                raise
            self._finish(info, tokens, started, outcome)
            return outcome
        try:
            if self.callback.is_async:
                value = await self.callback.acall(self.arguments, self.context)
            else:
                value = await off_the_loop(self.callback.call, self.arguments, self.context, what=self)
            return value if type(value) is str else convert_result(self.callback.name, value)  # a text needs nothing
        except Exception as exc:
            return exc

    def describe(self) -> str:
        """The call, as logs name it."""
        return f"Tool {self.callback.name!r} (call {self.call.id if self.call is not None else '-'})"

    def timed_out(self, seconds: float) -> ToolExecutionError:
        """The outcome of this call abandoned at a deadline of ``seconds``: told to the model (or
        raised) as any tool failure; its ``__cause__`` is a ``TimeoutError``, which an exception
        processor can single out (``DefaultToolExceptionProcessor(rethrow=(TimeoutError,))``)."""
        name = self.callback.name
        own = self.limit is not None and self.limit == self.callback.metadata.timeout
        whose = "the timeout of this tool" if own else "the deadline of this request's tool calls"
        error = ToolExecutionError(
            f"Tool '{name}' did not finish within {seconds:g} s, {whose}; "
            "it was abandoned and a result it gives later is discarded",
            tool_name=name,
        )
        error.__cause__ = TimeoutError(f"{self.describe()} did not finish within {seconds:g} s")
        return error

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


async def off_the_loop(fn: Callable[..., T], *args: object, what: Invocation | None = None) -> T:
    """Run a sync ``fn`` in a worker thread of the shared pool, so it never blocks the event loop
    (a sync tool may block for as long as it likes; the loop goes on serving its other tasks).

    The worker settles the caller's future itself, with one ``call_soon_threadsafe`` (no
    ``wrap_future`` chain of two futures and their callbacks). A caller cancelled before the call
    started cancels it, as ``wrap_future`` would; cancelled while it runs, the call is abandoned
    (its thread replaced, its late result logged as discarded, naming ``what``)."""
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

    pool = _default_pool()
    ends = what.ends if what is not None else None
    started = pool.submit(work) if ends is None else _submit(pool, ends, work)
    try:
        return await future
    except asyncio.CancelledError:
        abandon(pool, started, what)  # not started yet: it never runs
        raise


def _submit(pool: Executor, ends: float, fn: Callable[..., Any], *args: object) -> Future[Any]:
    """``fn`` on ``pool``; on the shared pool it never starts after ``ends`` (another executor's
    queued calls are cancelled by the runner instead)."""
    from ._pool import ToolThreadPool

    if isinstance(pool, ToolThreadPool):
        return pool.submit_until(ends, fn, *args)
    return pool.submit(fn, *args)


def abandon(pool: Executor, future: Future[Any], what: Invocation | None) -> None:
    """Stop waiting for ``future``'s call: not started, it never runs; running, it runs on (a thread
    cannot be stopped) and what it returns is logged and discarded. The shared pool replaces its
    thread; another executor's capacity is its owner's affair."""
    from ._pool import ToolThreadPool

    since = time.monotonic()
    late = functools.partial(_discarded, what, since)
    if isinstance(pool, ToolThreadPool):
        pool.abandon(future, late)
    elif not future.cancel():
        future.add_done_callback(lambda _: late())


def _discarded(what: Invocation | None, since: float, *_: object) -> None:
    _log.warning(
        "%s returned %.1f s after it was abandoned (its deadline passed or its caller was cancelled); "
        "its result is discarded",
        what.describe() if what is not None else "A sync call",
        time.monotonic() - since,
    )


def _settle_soon(loop: Any, settle: Callable[[Any], None], future: Any, value: object) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed while the call ran: nobody waits for it
        loop.call_soon_threadsafe(_settle, settle, future, value)


def _settle(settle: Callable[[Any], None], future: Any, value: object) -> None:
    if not future.done():  # a cancelled caller's future stays cancelled
        settle(value)


def _default_pool() -> ToolThreadPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            from ._pool import ToolThreadPool

            _pool = ToolThreadPool(_POOL_WORKERS, _MAX_ABANDONED, "chatclient-tool")
        return _pool


def run_all(
    invocations: Sequence[Invocation],
    executor: Executor | None = None,
    timeout: float | None = None,
    *,
    limited: bool = False,
) -> list[Outcome]:
    """Sync path: sync tools on the pool, async tools together on one event loop.

    The calling thread does one share of the work itself (the async group, or else the first sync
    call), so a batch of one sync call costs no thread hop. With a ``timeout`` (or ``limited``: some
    calls carry a ``limit`` of their own) every sync call runs on the pool (the caller's thread could
    not be abandoned), and each call still running at its deadline is abandoned.
    """
    if timeout is not None or limited:
        return _run_all_within(invocations, executor or _default_pool(), timeout)
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


def _arm(invocations: Sequence[Invocation], timeout: float | None) -> list[float | None]:
    """Give each call its deadline (its own ``limit``, else the batch's ``timeout``, from now) and
    return the seconds each may run (``None``: unbounded)."""
    now = time.monotonic()
    seconds = [timeout if inv.limit is None else inv.limit for inv in invocations]
    for invocation, limit in zip(invocations, seconds, strict=True):
        invocation.ends = None if limit is None else now + limit
    return seconds


def _by_deadline(invocations: Sequence[Invocation]) -> list[int]:
    """Indexes of the calls, soonest deadline first (unbounded last): waited for in this order, each
    call is abandoned at its own deadline."""
    return sorted(range(len(invocations)), key=lambda i: (invocations[i].ends is None, invocations[i].ends or 0.0))


def _left(ends: float | None) -> float | None:
    return None if ends is None else max(0.0, ends - time.monotonic())


def _stamped(invocation: Invocation) -> tuple[Outcome, float]:
    """The call's outcome and when it came: one that came after its deadline is discarded, even when
    the runner was busy elsewhere (the batch's async tools) and looked only later."""
    outcome = invocation.run()
    return outcome, time.monotonic()


def _run_all_within(invocations: Sequence[Invocation], pool: Executor, timeout: float | None) -> list[Outcome]:
    seconds = _arm(invocations, timeout)
    async_ix = [i for i, inv in enumerate(invocations) if inv.callback.is_async]
    outcomes: dict[int, Outcome] = {}
    futures = _submit_sync(invocations, set(async_ix), pool, outcomes)
    try:
        if async_ix:
            group = [invocations[i] for i in async_ix]
            ran = run_sync(lambda: _arun_armed(group, [seconds[i] for i in async_ix]))
            outcomes.update(zip(async_ix, ran, strict=True))
        for i in _by_deadline(invocations):
            if i in futures:
                outcomes[i] = _outcome_within(pool, futures[i], invocations[i], seconds[i])
    except BaseException:
        for i, future in futures.items():
            if i not in outcomes:  # not yet waited for (a call abandoned at its deadline has its outcome)
                abandon(pool, future, invocations[i])
        raise
    return [outcomes[i] for i in range(len(invocations))]


def _submit_sync(
    invocations: Sequence[Invocation], skip: set[int], pool: Executor, outcomes: dict[int, Outcome]
) -> dict[int, Future[tuple[Outcome, float]]]:
    """The sync calls on ``pool``, each never started after its deadline; a call the pool refuses
    (at its bound of abandoned calls) gets that refusal as its outcome."""
    futures: dict[int, Future[tuple[Outcome, float]]] = {}
    for i, invocation in enumerate(invocations):
        if i in skip:
            continue
        run = functools.partial(contextvars.copy_context().run, _stamped, invocation)
        try:
            ends = invocation.ends
            futures[i] = pool.submit(run) if ends is None else _submit(pool, ends, run)
        except Exception as exc:
            outcomes[i] = exc
    return futures


def _outcome_within(
    pool: Executor, future: Future[tuple[Outcome, float]], invocation: Invocation, limit: float | None
) -> Outcome:
    """The call's outcome, waiting no longer than its deadline; a call still running then is
    abandoned at once (its pool thread replaced), and one that came late is discarded."""
    from concurrent.futures import wait

    ends = invocation.ends
    wait((future,), timeout=_left(ends))
    if future.done() and not future.cancelled():
        outcome, came = future.result()
        if ends is None or came <= ends:
            return outcome
        _discarded(invocation, ends)
    else:
        abandon(pool, future, invocation)
    assert limit is not None  # only a bounded call can be late
    return invocation.timed_out(limit)


async def arun_all(
    invocations: Sequence[Invocation], timeout: float | None = None, *, limited: bool = False
) -> list[Outcome]:
    """Async path: every call as a task (sync tools in a worker thread); cancelled together. A lone
    call is simply awaited: no task to schedule. With a ``timeout`` (or ``limited``: some calls carry
    a ``limit`` of their own), each call still running at its deadline is cancelled (a sync tool's
    thread is abandoned, see :func:`off_the_loop`)."""
    if timeout is not None or limited:
        return await _arun_armed(invocations, _arm(invocations, timeout))
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


async def _arun_armed(invocations: Sequence[Invocation], seconds: Sequence[float | None]) -> list[Outcome]:
    """The calls, each cancelled at its deadline (``ends``, set by :func:`_arm`); the turn never
    waits for a cancelled call to wind down (an async tool may ignore its cancellation)."""
    import asyncio

    tasks = [asyncio.ensure_future(inv.arun()) for inv in invocations]
    abandoned: set[int] = set()
    try:
        for i in _by_deadline(invocations):
            task = tasks[i]
            if not task.done():
                await asyncio.wait((task,), timeout=_left(invocations[i].ends))
            if not task.done():
                task.cancel()
                task.add_done_callback(functools.partial(_cancelled, invocations[i], time.monotonic()))
                abandoned.add(i)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    outcomes: list[Outcome] = []
    for i, (invocation, task) in enumerate(zip(invocations, tasks, strict=True)):
        if i in abandoned:
            limit = seconds[i]
            assert limit is not None  # only a bounded call is abandoned
            outcomes.append(invocation.timed_out(limit))
        else:
            outcomes.append(task.result())
    if abandoned:
        await asyncio.sleep(0)  # the cancelled tasks take it now: a sync tool's thread is abandoned at once
    return outcomes


def _cancelled(invocation: Invocation, since: float, task: Any) -> None:
    """An abandoned task ended: cancelled as asked (an async tool stopped, or a sync one's thread was
    abandoned and is logged when it returns), or with an outcome it gave despite the cancellation."""
    if not task.cancelled():
        _discarded(invocation, since)
