"""Hung tools cannot starve other requests (issue 29, item 3).

A request's ``timeout`` (or the manager's ``tool_timeout``) bounds its tool calls; a call still
running then is abandoned, the model is told it timed out, and its late result is logged and
discarded. The shared pool replaces an abandoned call's thread, up to a bound. Concurrency is proved
with events: the hung tools stay blocked on theirs until each test releases them.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, UserMessage, tool
from chatclient.errors import ConfigurationError
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import DefaultToolExceptionProcessor, ToolCallingManager, _execution
from chatclient.tools._pool import ToolPoolExhaustedError, ToolThreadPool

from .helpers import GUARD, ask, call, prompt, reply
from .helpers import Discards as _Discards


class _Hung:
    """A sync tool that blocks on ``release``; ``all_entered`` is set once ``expected`` calls are in."""

    def __init__(self, expected: int = 1) -> None:
        self.expected = expected
        self.release = threading.Event()
        self.all_entered = threading.Event()
        self.entered = 0
        self.running = 0
        self._lock = threading.Lock()

        @tool(name="hang")
        def hang() -> str:
            """Waits for a dependency that never answers."""
            with self._lock:
                self.entered += 1
                self.running += 1
                if self.entered >= self.expected:
                    self.all_entered.set()
            try:
                self.release.wait(GUARD)
                return "late result"
            finally:
                with self._lock:
                    self.running -= 1

        self.tool = hang


@tool
def quick() -> str:
    """Answers at once."""
    return "quick result"


def _script(p: Prompt) -> Any:
    """Calls the tool the user names ("quick2": two quick calls), then answers with the results."""
    last = p.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " | ".join(r.response_data for r in last.responses)
    wanted = last.text or "" if isinstance(last, UserMessage) else ""
    if wanted == "quick2":
        return AssistantMessage(None, tool_calls=[tool_call("quick", {}), tool_call("quick", {})])
    return AssistantMessage(None, tool_calls=[tool_call(wanted, {})])


def _client() -> ChatClient:
    return ChatClient.create(ScriptedChatModel(_script))


async def _ask(client: ChatClient, text: str, mode: str, tools: list[Any], timeout: float | None = None) -> str:
    spec = client.prompt(text).tools(*tools)
    return await ask(spec if timeout is None else spec.timeout(timeout), mode)


# ------------------------------------------------------------------------------ 64 hung, a 65th quick


async def test_64_hung_sync_tools_do_not_starve_a_65th_async_request(pool: ToolThreadPool, discards: _Discards) -> None:
    hung = _Hung(expected=64)
    client = _client()
    requests = [asyncio.ensure_future(_ask(client, "hang", "acall", [hung.tool, quick], 1.0)) for _ in range(64)]
    try:
        assert await asyncio.to_thread(hung.all_entered.wait, GUARD)  # 64 threads of the pool's 64 hung
        answers = await asyncio.wait_for(asyncio.gather(*requests), GUARD)
        assert all("did not finish within 1 s" in answer for answer in answers)
        assert hung.running == 64 and pool.abandoned == 64  # still blocked, no longer counted
        answer = await asyncio.wait_for(_ask(client, "quick", "acall", [hung.tool, quick]), GUARD)
        assert answer == "quick result"
        assert hung.running == 64  # the quick request did not wait for a hung one to return
    finally:
        hung.release.set()
    assert await asyncio.to_thread(discards.wait_for, 64)
    assert pool.abandoned == 0


def test_64_hung_sync_tools_do_not_starve_a_65th_sync_request(pool: ToolThreadPool, discards: _Discards) -> None:
    hung = _Hung(expected=64)
    client = _client()
    callers = ThreadPoolExecutor(max_workers=65)
    try:
        requests = [
            callers.submit(lambda: client.prompt("hang").tools(hung.tool, quick).timeout(1.0).call().content())
            for _ in range(64)
        ]
        assert hung.all_entered.wait(GUARD)
        answers = [request.result(GUARD) for request in requests]
        assert all("did not finish within 1 s" in (answer or "") for answer in answers)
        assert hung.running == 64 and pool.abandoned == 64
        # Two quick calls and no timeout: the first runs on the caller's thread, the second needs the pool.
        answer = callers.submit(lambda: client.prompt("quick2").tools(hung.tool, quick).call().content())
        assert answer.result(GUARD) == "quick result | quick result"
        assert hung.running == 64
    finally:
        hung.release.set()
        callers.shutdown()
    assert discards.wait_for(64)
    assert pool.abandoned == 0


# ------------------------------------------------------------------------------ every mode


@pytest.mark.parametrize("mode", ["call", "stream", "acall", "astream"])
async def test_a_hung_tool_is_abandoned_at_the_request_timeout_and_its_late_result_discarded(
    mode: str, pool: ToolThreadPool, discards: _Discards
) -> None:
    hung = _Hung()
    try:
        answer = await asyncio.wait_for(_ask(_client(), "hang", mode, [hung.tool], 0.2), GUARD)
        assert answer == (
            "Tool 'hang' did not finish within 0.2 s, the deadline of this request's tool calls; "
            "it was abandoned and a result it gives later is discarded"
        )
        assert hung.running == 1 and pool.abandoned == 1
    finally:
        hung.release.set()
    assert await asyncio.to_thread(discards.wait_for, 1)
    assert pool.abandoned == 0
    assert discards.messages[0].startswith("Tool 'hang' (call call_")  # logged on "chatclient.tools"


async def test_a_hung_async_tool_is_cancelled_at_the_request_timeout() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool(name="hang")
    async def hang() -> str:
        """Waits forever, unless cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    answer = await asyncio.wait_for(_ask(_client(), "hang", "acall", [hang], 0.2), GUARD)
    assert "did not finish within 0.2 s" in answer
    assert started.is_set() and cancelled.is_set()


async def test_an_async_tool_that_ignores_its_cancellation_has_its_late_result_discarded(
    discards: _Discards,
) -> None:
    release = asyncio.Event()

    @tool(name="hang")
    async def stubborn() -> str:
        """Swallows its cancellation and answers later."""
        while True:
            try:
                await release.wait()
                return "late result"
            except asyncio.CancelledError:
                continue

    answer = await asyncio.wait_for(_ask(_client(), "hang", "acall", [stubborn], 0.2), GUARD)
    assert "did not finish within 0.2 s" in answer
    release.set()
    assert await asyncio.to_thread(discards.wait_for, 1)


def test_a_batch_of_async_tools_in_the_sync_path_is_bounded_too() -> None:
    @tool(name="hang")
    async def hang() -> str:
        """Waits forever, unless cancelled."""
        await asyncio.Event().wait()
        return "never"

    answer = _client().prompt("hang").tools(hang).timeout(0.2).call().content()
    assert answer is not None and "did not finish within 0.2 s" in answer


# ------------------------------------------------------------------------------ which deadline


def test_the_managers_tool_timeout_bounds_requests_without_one_and_the_shorter_applies() -> None:
    manager = ToolCallingManager.builder().tool_timeout(5).build()
    assert manager.tool_deadline(prompt()) == 5
    assert manager.tool_deadline(Prompt("hi", _options(timeout=2))) == 2
    assert manager.tool_deadline(Prompt("hi", _options(timeout=9))) == 5
    assert ToolCallingManager().tool_deadline(prompt()) is None
    assert ToolCallingManager().tool_deadline(Prompt("hi", _options(timeout=3))) == 3
    with pytest.raises(ConfigurationError, match="tool_timeout must be a positive number"):
        ToolCallingManager(tool_timeout=0)


def test_the_managers_tool_timeout_abandons_a_hung_call(pool: ToolThreadPool, discards: _Discards) -> None:
    hung = _Hung()
    manager = ToolCallingManager(tool_timeout=0.2)
    try:
        result = manager.execute_tool_calls(prompt([hung.tool, quick]), reply(call("hang", id="h"), call("quick")))
        by_id = {r.id: r for r in result.tool_responses}
        assert by_id["h"].is_error and "did not finish within 0.2 s" in by_id["h"].response_data
        assert by_id["call_quick"].response_data == "quick result"  # the batch's other call kept its result
    finally:
        hung.release.set()
    assert discards.wait_for(1)


def test_a_processor_that_rethrows_timeouts_fails_the_request(pool: ToolThreadPool) -> None:
    hung = _Hung()
    manager = ToolCallingManager(tool_timeout=0.2, exception_processor=DefaultToolExceptionProcessor((TimeoutError,)))
    try:
        with pytest.raises(TimeoutError, match=r"Tool 'hang' \(call h\) did not finish within 0.2 s"):
            manager.execute_tool_calls(prompt([hung.tool]), reply(call("hang", id="h")))
    finally:
        hung.release.set()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_call_still_queued_at_the_deadline_never_runs(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    small = ToolThreadPool(1, 4, "test-one")
    monkeypatch.setattr(_execution, "_pool", small)
    hung = _Hung()
    ran: list[str] = []

    @tool
    def queued() -> str:
        """Would run after the hung one."""
        ran.append("queued")
        return "ran"

    manager = ToolCallingManager(tool_timeout=0.2)
    try:
        batch = (prompt([hung.tool, queued]), reply(call("hang"), call("queued")))
        if mode == "sync":
            result = await asyncio.to_thread(manager.execute_tool_calls, *batch)
        else:
            result = await manager.aexecute_tool_calls(*batch)
        assert all("did not finish" in r.response_data for r in result.tool_responses)
    finally:
        hung.release.set()
        small.shutdown()
    assert ran == []


# ------------------------------------------------------------------------------ the bound


def test_the_pool_replaces_abandoned_threads_up_to_its_bound_then_refuses_at_once() -> None:
    small = ToolThreadPool(workers=1, max_abandoned=2, name="test-bound")
    releases = [threading.Event() for _ in range(3)]
    entered = [threading.Event() for _ in range(3)]
    late: list[int] = []

    def block(i: int) -> str:
        entered[i].set()
        releases[i].wait(GUARD)
        return f"late {i}"

    try:
        first = small.submit(block, 0)
        assert entered[0].wait(GUARD)
        assert small.abandon(first, lambda: late.append(0))  # its thread is replaced...
        second = small.submit(block, 1)  # ...so the one-worker pool runs this at once
        assert entered[1].wait(GUARD)
        assert small.abandon(second, lambda: late.append(1))
        assert small.abandoned == 2
        with pytest.raises(ToolPoolExhaustedError, match=r"max_abandoned=2"):
            small.submit(block, 2)  # refused, not queued behind the hung ones
        releases[0].set()
        assert first.result(GUARD) == "late 0"
        third = small.submit(lambda: "after")  # one abandoned call returned: accepted again
        assert third.result(GUARD) == "after"
        assert late == [0] and small.abandoned == 1
    finally:
        for release in releases:
            release.set()
        small.shutdown()


def test_a_call_not_started_is_cancelled_not_abandoned() -> None:
    small = ToolThreadPool(workers=1, max_abandoned=1, name="test-cancel")
    release, entered = threading.Event(), threading.Event()
    try:

        def block() -> bool:
            entered.set()
            return release.wait(GUARD)

        running = small.submit(block)
        assert entered.wait(GUARD)
        waiting = small.submit(lambda: "never")
        assert small.abandon(waiting) is False and waiting.cancelled()
        assert small.abandoned == 0
    finally:
        release.set()
        running.result(GUARD)
        small.shutdown()


def test_at_the_bound_a_sync_tool_call_fails_at_once_and_the_model_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    full = ToolThreadPool(workers=1, max_abandoned=1, name="test-full")
    monkeypatch.setattr(_execution, "_pool", full)
    hung = _Hung()
    manager = ToolCallingManager(tool_timeout=0.2)
    try:
        manager.execute_tool_calls(prompt([hung.tool]), reply(call("hang")))
        assert full.abandoned == 1
        result = manager.execute_tool_calls(prompt([quick]), reply(call("quick")))
        text = result.tool_responses[0].response_data
        assert result.tool_responses[0].is_error
        assert "ToolPoolExhaustedError" in text and "max_abandoned=1" in text
    finally:
        hung.release.set()
        full.shutdown()


def _options(**values: Any) -> Any:
    from chatclient.options import ToolCallingChatOptions

    return ToolCallingChatOptions(**values)


def test_a_custom_executors_hung_call_is_abandoned_too(discards: _Discards) -> None:
    executor = ThreadPoolExecutor(max_workers=2)
    hung = _Hung()
    manager = ToolCallingManager(executor=executor, tool_timeout=0.2)
    try:
        result = manager.execute_tool_calls(prompt([hung.tool]), reply(call("hang")))
        assert "did not finish within 0.2 s" in result.tool_responses[0].response_data
        assert hung.running == 1
    finally:
        hung.release.set()
    assert discards.wait_for(1)
    executor.shutdown()


async def test_a_cancelled_request_abandons_its_running_sync_tool(pool: ToolThreadPool, discards: _Discards) -> None:
    hung = _Hung()
    request = asyncio.ensure_future(_ask(_client(), "hang", "acall", [hung.tool]))  # no deadline
    try:
        assert await asyncio.to_thread(hung.all_entered.wait, GUARD)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert pool.abandoned == 1 and hung.running == 1  # its thread no longer counts
    finally:
        hung.release.set()
    assert await asyncio.to_thread(discards.wait_for, 1)
    assert pool.abandoned == 0
