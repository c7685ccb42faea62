"""A provider's connection over its life, observed on a real server on 127.0.0.1: nothing at
construction, the session DELETE at close, and one reconnect after the server restarts."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import ChatClient
from chatclient.errors import ToolExecutionError
from chatclient.mcp import (
    AsyncMcpToolCallbackProvider,
    McpCallInterruptedError,
    McpConnectionError,
    McpServerConnection,
    McpToolCallbackProvider,
)
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import ServedMcp, serving_mcp_server
from chatclient.tools import DefaultToolExceptionProcessor, ToolCallingManager
from tests.mcp.servers import demo_server
from tests.mcp.test_mcp_client import calling, last_responses


def test_construction_connects_nowhere_and_close_ends_the_session_with_a_delete() -> None:
    with serving_mcp_server(demo_server()) as served:
        provider = McpToolCallbackProvider(McpServerConnection.http(served.url, name="demo", mode="legacy"))
        assert served.connections == 0 and served.requests == [], "no connection before the first request"
        model = ScriptedChatModel(calling("add", {"a": 1, "b": 2}))
        assert ChatClient.create(model).prompt("Sum").tools(provider).call().content() == "3"
        session_ids = {r.session_id for r in served.requests if r.session_id}
        assert len(session_ids) == 1 and served.connections >= 1
        provider.close()
        deletes = [r for r in served.requests if r.method == "DELETE"]
        assert [(r.session_id, r.status) for r in deletes] == [(session_ids.pop(), 200)]


async def test_the_async_provider_connects_nowhere_until_entered_and_deletes_on_exit() -> None:
    with serving_mcp_server(demo_server()) as served:
        provider = AsyncMcpToolCallbackProvider(McpServerConnection.http(served.url, name="demo", mode="legacy"))
        assert served.connections == 0
        async with provider:
            assert served.connections >= 1
        assert [r.status for r in served.requests if r.method == "DELETE"] == [200]


class Restartable:
    """A demo server that the test stops and starts again (a fresh server, new sessions) on its port."""

    def __init__(self, calls: Counter[str]) -> None:
        self.calls = calls
        self._running: Any = None
        self.served = self.start()

    @property
    def url(self) -> str:
        return self.served.url

    def start(self) -> ServedMcp:
        port = self.served.port if self._running is None and hasattr(self, "served") else 0
        self._running = serving_mcp_server(demo_server("demo", self.calls), port=port)
        self.served = self._running.__enter__()
        return self.served

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            running.__exit__(None, None, None)


@pytest.fixture
def server() -> Iterator[Restartable]:
    restartable = Restartable(Counter())
    yield restartable
    restartable.stop()


def ask(provider: Any, name: str = "add", mode: str = "call", **arguments: int) -> tuple[str | None, Any]:
    """One request calling ``name``: the final text and the model (to read what it was told)."""
    model = ScriptedChatModel(calling(name, arguments))
    response, _ = run_spec(mode, ChatClient.create(model).prompt("Go").tools(provider))
    return (response.chat_response.text if response.chat_response else None), model


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_after_a_restart_the_next_request_reconnects_and_lists_again(
    mode: str, protocol: str, server: Restartable
) -> None:
    with McpToolCallbackProvider(McpServerConnection.http(server.url, name="demo", mode=protocol)) as provider:
        assert ask(provider, mode=mode, a=1, b=2)[0] == "3"
        server.stop()
        assert "'demo'" in told_while_down(provider, mode)
        again = server.start()
        assert ask(provider, mode=mode, a=2, b=2)[0] == "4"
        assert again.connections >= 1 and "POST" in {r.method for r in again.requests}
    assert server.calls == {"add": 2}


def told_while_down(provider: Any, mode: str) -> str:
    """A request while the server is down: its call fails and the model is told, or, when the
    provider already knew (a modern listen stream dropped and asked for a new listing), the request
    fails with one McpConnectionError. Either way a clear error naming the server."""
    try:
        _, model = ask(provider, mode=mode, a=1, b=2)
    except McpConnectionError as error:
        assert getattr(error.cause, "exceptions", None) is None
        return str(error)
    (response,) = last_responses(model)
    assert response.is_error and "lost the connection during tool 'add'" in response.response_data
    return response.response_data


def test_a_listing_that_finds_the_session_forgotten_reconnects_within_the_same_request(server: Restartable) -> None:
    with McpToolCallbackProvider(McpServerConnection.http(server.url, name="demo", mode="legacy")) as provider:
        assert ask(provider, a=1, b=1)[0] == "2"
        server.stop()
        again = server.start()
        provider.invalidate_cache()
        assert ask(provider, a=2, b=3)[0] == "5", "one request: 404 on the listing, reconnect, list, call"
        assert again.requests[0].status == 404
    assert server.calls == {"add": 2}


def test_a_stateful_session_the_restarted_server_forgot_is_reopened_by_the_next_request(server: Restartable) -> None:
    """No call while the server is down: the restarted server answers 404 for the old session id."""
    with McpToolCallbackProvider(McpServerConnection.http(server.url, name="demo", mode="legacy")) as provider:
        assert ask(provider, a=1, b=1)[0] == "2"
        server.stop()
        again = server.start()
        assert "lost the connection" in (ask(provider, a=1, b=2)[0] or "")
        (refused,) = again.requests
        assert refused.status == 404, "the old session id was refused"
        assert ask(provider, a=2, b=2)[0] == "4"
        new_sessions = {r.session_id for r in again.requests if r.status == 200} - {None}
        assert len(new_sessions) == 1 and refused.session_id not in new_sessions, "a new session"
    assert server.calls == {"add": 2}


def test_a_server_still_down_at_the_next_request_is_one_connection_error(server: Restartable) -> None:
    with McpToolCallbackProvider(McpServerConnection.http(server.url, name="demo")) as provider:
        provider.get_tool_callbacks()
        server.stop()
        assert "'demo'" in told_while_down(provider, "call")
        model = ScriptedChatModel(["never asked"])
        with pytest.raises(McpConnectionError, match="'demo' is unreachable") as raised:
            ChatClient.create(model).prompt("S").tools(provider).call().content()
        assert getattr(raised.value.cause, "exceptions", None) is None, "no exception group leaks"
        assert model.calls == 0


def stoppable_server(started: threading.Event) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("drop", log_level="WARNING")

    @server.tool(description="Runs until the server goes away")
    async def long() -> str:
        started.set()
        await anyio.sleep(30)
        return "finished"

    return server


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_a_call_in_flight_when_the_server_goes_away_is_a_clear_connection_error(protocol: str) -> None:
    started = threading.Event()
    manager = serving_mcp_server(stoppable_server(started))
    served = manager.__enter__()
    try:
        with McpToolCallbackProvider(McpServerConnection.http(served.url, name="drop", mode=protocol)) as provider:
            (long,) = provider.get_tool_callbacks()
            stopper = threading.Thread(target=lambda: (started.wait(10), manager.__exit__(None, None, None)))
            stopper.start()
            with pytest.raises(McpCallInterruptedError, match="'drop' lost the connection during tool") as raised:
                long.call("{}")
            stopper.join(15)
    finally:
        if not started.is_set():
            manager.__exit__(None, None, None)
    error = raised.value
    assert isinstance(error, McpConnectionError) and isinstance(error, ToolExecutionError)
    assert getattr(error.cause, "exceptions", None) is None


async def test_the_loops_error_handling_applies_to_a_dropped_call_model_told_or_rethrown(server: Restartable) -> None:
    legacy = McpServerConnection.http(server.url, name="demo", mode="legacy")  # no listen stream to notice first
    async with AsyncMcpToolCallbackProvider(legacy) as provider:
        await asyncio.to_thread(server.stop)
        told = ScriptedChatModel(calling("add", {"a": 1, "b": 2}))
        text = await ChatClient.create(told).prompt("S").tools(provider).acall().content()
        assert text is not None and "'demo' lost the connection during tool 'add'" in text
        rethrow = DefaultToolExceptionProcessor(rethrow=(McpConnectionError,))
        loop = ToolCallingAdvisor(ToolCallingManager.builder().exception_processor(rethrow).build())
        strict = ChatClient.builder(ScriptedChatModel(calling("add", {"a": 1, "b": 2}))).tool_calling_advisor(loop)
        with pytest.raises(McpConnectionError, match="'demo' is unreachable"):
            await strict.build().prompt("S").tools(provider).acall().content()
    assert server.calls == {}


def test_a_stdio_child_that_died_is_started_again_by_the_next_request() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    connection = McpServerConnection.stdio(
        sys.executable, ["-m", "tests.mcp.stdio_server"], name="child", cwd=root, env={"PYTHONPATH": root}
    )
    with McpToolCallbackProvider(connection) as provider:
        first = int(ask(provider, "pid")[0] or "0")
        os.kill(first, signal.SIGKILL)
        try:
            told = ask(provider, "pid")[0] or ""
        except McpConnectionError as error:  # the provider noticed the exit before the call
            told = str(error)
        assert "'child'" in told
        second = int(ask(provider, "pid")[0] or "0")
    assert second > 0 and second != first
