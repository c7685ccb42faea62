"""A tool's own timeout (``@tool(timeout=...)``, ``FunctionToolCallback.builder(...).timeout(...)``).

Each call is abandoned at its own deadline: its tool's timeout (which replaces the manager's default
``tool_timeout``), capped by the request's ``timeout``. Hung tools block on events the tests set only
at the end; no test measures a duration.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, UserMessage, tool
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import FunctionToolCallback, ToolCallingManager, _execution
from chatclient.tools._pool import ToolThreadPool

from .helpers import GUARD, ask, call, prompt, reply
from .helpers import Discards as _Discards

OWN = "the timeout of this tool; it was abandoned and a result it gives later is discarded"
REQUEST = "the deadline of this request's tool calls; it was abandoned and a result it gives later is discarded"


class _Blocked:
    """Tools that block on ``release`` (never set until the test ends)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.cancelled = threading.Event()
        self.returned = threading.Event()

        @tool(name="hang", timeout=0.2)
        def hang() -> str:
            """Waits for a dependency that never answers."""
            self.entered.set()
            self.release.wait(GUARD)
            self.returned.set()
            return "late result"

        @tool(name="ahang", timeout=0.2)
        async def ahang() -> str:
            """An async tool that waits for a dependency that never answers."""
            self.entered.set()
            try:
                await asyncio.Event().wait()  # never set: only the cancellation ends it
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            return "late result"

        self.hang, self.ahang = hang, ahang


@pytest.fixture
def blocked() -> Iterator[_Blocked]:
    tools = _Blocked()
    yield tools
    tools.release.set()


def _script(p: Prompt) -> Any:
    last = p.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " | ".join(r.response_data for r in last.responses)
    wanted = last.text or "" if isinstance(last, UserMessage) else ""
    return AssistantMessage(None, tool_calls=[tool_call(name, {}) for name in wanted.split()])


async def _ask(text: str, mode: str, tools: list[Any], timeout: float | None = None) -> str:
    spec = ChatClient.create(ScriptedChatModel(_script)).prompt(text).tools(*tools)
    return await ask(spec if timeout is None else spec.timeout(timeout), mode)


@pytest.mark.parametrize("mode", ["call", "stream", "acall", "astream"])
async def test_a_hung_sync_tool_is_abandoned_at_its_own_timeout_and_its_late_result_discarded(
    mode: str, blocked: _Blocked, pool: ToolThreadPool, discards: _Discards
) -> None:
    answer = await asyncio.wait_for(_ask("hang", mode, [blocked.hang]), GUARD)
    assert answer == f"Tool 'hang' did not finish within 0.2 s, {OWN}"
    assert not blocked.returned.is_set() and pool.abandoned == 1  # the turn did not wait for it
    blocked.release.set()
    assert await asyncio.to_thread(discards.wait_for, 1)  # it returned, and its result went nowhere
    assert "late result" not in answer and pool.abandoned == 0


@pytest.mark.parametrize("mode", ["acall", "astream"])
async def test_a_hung_async_tool_is_cancelled_at_its_own_timeout(mode: str, blocked: _Blocked) -> None:
    answer = await asyncio.wait_for(_ask("ahang", mode, [blocked.ahang]), GUARD)
    assert answer == f"Tool 'ahang' did not finish within 0.2 s, {OWN}"
    assert await asyncio.to_thread(blocked.cancelled.wait, GUARD)


@pytest.mark.parametrize("mode", ["call", "stream"])
def test_a_hung_async_tool_of_a_sync_request_is_cancelled_at_its_own_timeout(mode: str, blocked: _Blocked) -> None:
    """Run on the test's own thread: its event loop (where the async tool runs) lives on."""
    spec = ChatClient.create(ScriptedChatModel(_script)).prompt("ahang").tools(blocked.ahang)
    answer = spec.call().content() if mode == "call" else "".join(spec.stream().content())
    assert answer == f"Tool 'ahang' did not finish within 0.2 s, {OWN}"
    assert blocked.cancelled.is_set()  # cancelled before the turn went on


@pytest.mark.parametrize("mode", ["call", "acall"])
async def test_the_requests_shorter_timeout_caps_a_tools_own(mode: str, pool: ToolThreadPool) -> None:
    release = threading.Event()

    @tool(name="slow", timeout=GUARD)
    def slow() -> str:
        """Waits for longer than the request allows."""
        release.wait(GUARD)
        return "late"

    try:
        answer = await asyncio.wait_for(_ask("slow", mode, [slow], timeout=0.2), GUARD)
    finally:
        release.set()
    assert answer == f"Tool 'slow' did not finish within 0.2 s, {REQUEST}"


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_each_call_is_abandoned_at_its_own_deadline_and_a_tools_timeout_replaces_the_managers_default(
    path: str, monkeypatch: pytest.MonkeyPatch, pool: ToolThreadPool
) -> None:
    """``hang`` has no timeout of its own: the manager's default (0.2 s) abandons it while ``patient``
    (its own, longer timeout) still runs; ``patient`` returns only once ``hang`` was abandoned."""
    release, abandoned = threading.Event(), threading.Event()
    real_abandon = _execution.abandon

    def observed_abandon(*args: Any) -> None:
        real_abandon(*args)
        abandoned.set()

    monkeypatch.setattr(_execution, "abandon", observed_abandon)

    @tool
    def hang() -> str:
        """Never answers."""
        release.wait(GUARD)
        return "late"

    @tool(timeout=GUARD)
    def patient() -> str:
        """Answers once the other call of its batch was given up."""
        return "patient result" if abandoned.wait(GUARD) else "hang was never abandoned"

    manager = ToolCallingManager(tool_timeout=0.2)
    request = prompt([hang, patient])
    response = reply(call("hang"), call("patient"))
    try:
        if path == "sync":
            result = await asyncio.to_thread(manager.execute_tool_calls, request, response)
        else:
            result = await manager.aexecute_tool_calls(request, response)
    finally:
        release.set()
    hung, waited = result.tool_responses
    assert hung.is_error and hung.response_data == f"Tool 'hang' did not finish within 0.2 s, {REQUEST}"
    assert waited.response_data == "patient result"


def test_a_sync_result_that_came_after_its_deadline_is_discarded_though_the_runner_looked_later(
    pool: ToolThreadPool, discards: _Discards, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the sync path the batch's async tools run first; a sync call that finished after its own
    deadline meanwhile is reported as timed out, not used. The runner's clock is moved past the
    deadline by the test (no waiting on a real one)."""
    release, finished = threading.Event(), threading.Event()
    moved = [0.0]
    real = time.monotonic
    monkeypatch.setattr(
        _execution, "time", SimpleNamespace(monotonic=lambda: real() + moved[0], perf_counter=time.perf_counter)
    )

    @tool(timeout=0.2)
    def quickish() -> str:
        """Answers once released."""
        release.wait(GUARD)
        finished.set()
        return "too late"

    @tool(timeout=GUARD)
    async def waiter() -> str:
        """Moves the clock past the other call's deadline, then lets it finish."""
        moved[0] = 1.0
        release.set()
        await asyncio.to_thread(finished.wait, GUARD)
        return "waited"

    batch = reply(call("quickish"), call("waiter"))
    result = ToolCallingManager().execute_tool_calls(prompt([quickish, waiter]), batch)
    late, waited = result.tool_responses
    assert late.is_error and late.response_data == f"Tool 'quickish' did not finish within 0.2 s, {OWN}"
    assert waited.response_data == "waited"
    assert discards.wait_for(1)


def test_the_builder_sets_a_timeout_and_bad_timeouts_are_refused_where_they_are_given() -> None:
    callback = FunctionToolCallback.builder("t", lambda: "x").timeout(1.5).build()
    assert callback.metadata.timeout == 1.5
    for bad in (0, -1, float("nan"), "5", True):
        with pytest.raises(ValueError, match="a tool's timeout is a positive number of seconds"):
            tool(timeout=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="a tool's timeout is a positive number of seconds"):
            FunctionToolCallback.builder("t", lambda: "x").timeout(bad)  # type: ignore[arg-type]


def test_a_tool_set_without_own_timeouts_runs_as_before() -> None:
    @tool
    def plain() -> str:
        """Answers."""
        return "ok"

    manager = ToolCallingManager()
    request = prompt([plain])
    assert manager._limit_calls(request, []) is False
    assert manager.execute_tool_calls(request, reply(call("plain"))).tool_responses[0].response_data == "ok"
