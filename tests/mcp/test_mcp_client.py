"""MCP tools through the chat loop, against real MCP servers on 127.0.0.1 (random ports, started here)
and one real stdio child. No mock of MCP: the official SDK on both sides."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage, tool
from chatclient.errors import ConfigurationError, DuplicateToolNameError
from chatclient.mcp import (
    AsyncMcpToolCallbackProvider,
    McpConnectionError,
    McpProtocolError,
    McpServerConnection,
    McpToolCallbackProvider,
    McpToolNaming,
    sanitise_name,
)
from chatclient.messages import ImagePart, ToolResponse
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import running_mcp_server
from tests.mcp.servers import demo_server

CALLS: Counter[str] = Counter()
"""What the shared demo server received, by original tool name (reset before each test)."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_mcp_server(demo_server("demo", CALLS)) as served:
        yield served


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


@pytest.fixture
def provider(url: str) -> Iterator[McpToolCallbackProvider]:
    """A generous call timeout: a loaded CI machine must not turn a quick call into a timeout."""
    with McpToolCallbackProvider(McpServerConnection.http(url, name="demo", call_timeout_s=30)) as p:
        yield p


@pytest.fixture
def impatient(url: str) -> Iterator[McpToolCallbackProvider]:
    """A call timeout the 3 s ``slow`` tool always passes, and a quick ``add`` never nears."""
    with McpToolCallbackProvider(McpServerConnection.http(url, name="demo", call_timeout_s=1)) as p:
        yield p


def calling(name: str, arguments: dict[str, Any] | None = None) -> Any:
    """A script: call ``name`` once, then answer with the tool results' text."""

    def script(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return " | ".join(r.response_data for r in last.responses)
        return AssistantMessage(None, tool_calls=[tool_call(name, arguments or {})])

    return script


def last_responses(model: ScriptedChatModel) -> list[ToolResponse]:
    message = model.prompts[-1].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    return list(message.responses)


# ----------------------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("mode", MODES)
def test_the_models_call_reaches_the_server_by_its_original_name(mode: str, provider: McpToolCallbackProvider) -> None:
    model = ScriptedChatModel(calling("add", {"a": 2, "b": 3}))
    response, _ = run_spec(mode, ChatClient.create(model).prompt("2+3?").tools(provider))
    assert CALLS == {"add": 1}
    assert [r.response_data for r in last_responses(model)] == ["5"]
    assert response.chat_response is not None and response.chat_response.text == "5"
    assert [t.name for t in model.prompts[0].tool_callbacks][:2] == ["add", "explode"]


async def test_async_provider_on_the_requests_loop_call_and_stream(url: str) -> None:
    async with AsyncMcpToolCallbackProvider(McpServerConnection.http(url, name="demo")) as provider:
        model = ScriptedChatModel(calling("search", {"query": "cats"}))
        client = ChatClient.create(model)
        assert await client.prompt("Find").tools(provider).acall().content() == "demo found cats"
        chunks = [chunk async for chunk in client.prompt("Find").tools(provider).astream().content()]
        assert "".join(chunks) == "demo found cats"
    assert CALLS == {"search": 2}


async def test_the_async_providers_tools_refuse_sync_use_with_a_clear_error(url: str) -> None:
    async with AsyncMcpToolCallbackProvider(McpServerConnection.http(url, name="demo")) as provider:
        add = {c.name: c for c in await provider.tool_callbacks()}["add"]
        with pytest.raises(RuntimeError, match="McpToolCallbackProvider for sync code"):
            add.call('{"a": 1, "b": 1}')
    assert CALLS == {}


async def test_a_sync_call_inside_a_running_event_loop(provider: McpToolCallbackProvider) -> None:
    model = ScriptedChatModel(calling("add", {"a": 20, "b": 22}))
    assert ChatClient.create(model).prompt("Sum").tools(provider).call().content() == "42"
    assert CALLS == {"add": 1}


def test_nothing_connects_at_construction_and_close_is_idempotent(url: str) -> None:
    provider = McpToolCallbackProvider(McpServerConnection.http(url, name="demo"))
    assert provider._runtime is None, "no thread, no connection, no listing before the first request"
    provider.close()
    provider.close()


# ----------------------------------------------------------------------------------------- results


@pytest.mark.parametrize("mode", MODES)
def test_an_is_error_result_goes_to_the_model_and_the_loop_continues(
    mode: str, provider: McpToolCallbackProvider
) -> None:
    for name, args, text in (
        ("explode", {}, "Error executing tool explode"),
        ("refuse", {"reason": "no"}, "Error executing tool refuse: refused: no"),
    ):
        model = ScriptedChatModel(calling(name, args))
        final, _ = run_spec(mode, ChatClient.create(model).prompt("Go").tools(provider))
        assert final.chat_response is not None and final.chat_response.text == text
        (response,) = last_responses(model)
        assert response.is_error and "secret" not in response.response_data
    assert CALLS == {"explode": 1, "refuse": 1}


def test_images_arrive_as_image_parts_and_structured_content_is_kept(provider: McpToolCallbackProvider) -> None:
    tools = {c.name: c for c in provider.get_tool_callbacks()}
    picture = tools["picture"].call("{}")
    assert not isinstance(picture, str)
    assert isinstance(picture.parts[0], ImagePart) and picture.parts[0].media_type == "image/png"
    added = tools["add"].call('{"a": 1, "b": 2}')
    assert not isinstance(added, str)
    assert added.text == "3" and added.metadata["structured_content"] == {"result": 3}


@pytest.mark.parametrize("mode", MODES)
def test_a_call_past_its_timeout_is_an_error_result_and_the_session_stays_usable(
    mode: str, impatient: McpToolCallbackProvider
) -> None:
    model = ScriptedChatModel(calling("slow"))
    response, _ = run_spec(mode, ChatClient.create(model).prompt("Wait").tools(impatient))
    assert response.chat_response is not None and "timed out after 1 s" in (response.chat_response.text or "")
    assert last_responses(model)[0].is_error
    follow_up = ScriptedChatModel(calling("add", {"a": 1, "b": 1}))
    answered, _ = run_spec(mode, ChatClient.create(follow_up).prompt("Sum").tools(impatient))
    assert answered.chat_response is not None and answered.chat_response.text == "2"


@pytest.mark.parametrize("mode", MODES)
def test_an_unreachable_server_is_one_connection_error_naming_it(mode: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with McpToolCallbackProvider(McpServerConnection.http(f"http://127.0.0.1:{port}/mcp", name="gone")) as p:
            model = ScriptedChatModel(["never asked"])
            with pytest.raises(McpConnectionError, match="'gone' is unreachable") as raised:
                run_spec(mode, ChatClient.create(model).prompt("Hi").tools(p))
    assert getattr(raised.value.cause, "exceptions", None) is None, "no exception group leaks"
    assert model.calls == 0


# ----------------------------------------------------------------------------------------- naming


def test_names_are_sanitised_and_long_names_cut_the_same_way_every_time(url: str) -> None:
    assert sanitise_name("weather.get-forecast").startswith("weather_get-forecast_")  # changed: a hash follows
    assert sanitise_name("weather_get-forecast") == "weather_get-forecast"
    long = "very.long." + "x" * 90
    names = []
    for _ in range(2):
        with McpToolCallbackProvider(McpServerConnection.http(url, name="demo")) as p:
            (callback,) = [c for c in p.get_tool_callbacks() if c.original_name == long]
            names.append(callback.name)
            assert callback.call("{}").text == "long ok"  # type: ignore[union-attr]
    assert names[0] == names[1] == sanitise_name(long) and len(names[0]) == 64


def test_two_servers_with_the_same_tool_name_are_an_error_naming_both_then_prefixes_work() -> None:
    a_calls: Counter[str] = Counter()
    b_calls: Counter[str] = Counter()
    with running_mcp_server(demo_server("a", a_calls)) as a, running_mcp_server(demo_server("b", b_calls)) as b:
        connections = (McpServerConnection.http(a, name="a"), McpServerConnection.http(b, name="b"))
        with McpToolCallbackProvider(*connections) as clashing, pytest.raises(ConfigurationError) as clash:
            clashing.get_tool_callbacks()
        assert "server 'a'" in str(clash.value) and "server 'b'" in str(clash.value)
        assert "server_prefix" in str(clash.value)
        with McpToolCallbackProvider(*connections, naming=McpToolNaming.server_prefix()) as provider:
            tools = {c.name: c for c in provider.get_tool_callbacks()}
            assert tools["a_search"].call('{"query": "x"}').text == "a found x"  # type: ignore[union-attr]
            assert tools["b_search"].call('{"query": "y"}').text == "b found y"  # type: ignore[union-attr]
    assert a_calls == {"search": 1} and b_calls == {"search": 1}


def test_a_local_tool_with_an_mcp_tools_name_is_the_clients_duplicate_error(provider: McpToolCallbackProvider) -> None:
    @tool(description="local add")
    def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedChatModel(calling("add", {"a": 1, "b": 1}))
    with pytest.raises(DuplicateToolNameError):
        ChatClient.create(model).prompt("Sum").tools(provider, add).call().content()
    assert CALLS == {}


def test_a_filtered_out_tool_is_not_offered_and_never_reaches_the_server(url: str) -> None:
    keep_add = McpServerConnection.http(url, name="demo")
    with McpToolCallbackProvider(keep_add, tool_filter=lambda server, t: t.name == "add") as provider:
        model = ScriptedChatModel(calling("search", {"query": "x"}))
        ChatClient.create(model).prompt("Find").tools(provider).call().content()
        assert [t.name for t in model.prompts[0].tool_callbacks] == ["add"]
        assert last_responses(model)[0].is_error
    assert CALLS == {}


# ----------------------------------------------------------------------------------------- stdio


@pytest.mark.parametrize("mode", MODES)
def test_a_stdio_child_serves_tools_and_is_gone_after_close(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # no file descriptor, as in Jupyter
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    connection = McpServerConnection.stdio(
        sys.executable, ["-m", "tests.mcp.stdio_server"], name="child", cwd=root, env={"PYTHONPATH": root}
    )
    provider = McpToolCallbackProvider(connection)
    model = ScriptedChatModel(calling("pid"))
    final, _ = run_spec(mode, ChatClient.create(model).prompt("Pid?").tools(provider))
    pid = int(final.chat_response.text or "0") if final.chat_response is not None else 0
    assert pid > 0 and pid != os.getpid()
    provider.close()
    assert _gone(pid)


def _gone(pid: int) -> bool:
    """The child exited and was reaped (``close`` waits for the SDK's bounded shutdown)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
    return state.strip().startswith("Z") or not state.strip()


# ----------------------------------------------------------------------------------------- concurrency


def four_meetings(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " ".join(r.response_data for r in last.responses)
    return AssistantMessage(None, tool_calls=[tool_call("meet", {"who": i}, id=f"m{i}") for i in range(4)])


@pytest.mark.parametrize("mode", MODES)
def test_the_calls_of_one_reply_are_in_flight_together(mode: str, url: str) -> None:
    """The server tool returns "met" only when all four calls are in flight at once (a barrier)."""
    with (
        running_mcp_server(demo_server("meet")) as own,
        McpToolCallbackProvider(McpServerConnection.http(own, name="meet")) as provider,
    ):
        model = ScriptedChatModel(four_meetings)
        response, _ = run_spec(mode, ChatClient.create(model).prompt("Meet").tools(provider))
    assert response.chat_response is not None and response.chat_response.text == "met met met met"


async def test_async_provider_runs_the_calls_of_one_reply_together() -> None:
    with running_mcp_server(demo_server("meet")) as own:
        async with AsyncMcpToolCallbackProvider(McpServerConnection.http(own, name="meet")) as provider:
            model = ScriptedChatModel(four_meetings)
            assert await ChatClient.create(model).prompt("Meet").tools(provider).acall().content() == "met met met met"


# ----------------------------------------------------------------------------------------- cancellation, lifecycle


def hang_server(started: threading.Event, cancelled: threading.Event) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("hang", log_level="WARNING")

    @server.tool(description="Hangs until cancelled")
    async def hang() -> str:
        started.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "woke"

    @server.tool(description="Echo")
    def echo(text: str) -> str:
        return text

    return server


@pytest.mark.parametrize("kind", ["thread-backed", "async"])
async def test_cancelling_a_request_cancels_the_remote_call_and_the_provider_stays_usable(kind: str) -> None:
    started, cancelled = threading.Event(), threading.Event()
    with running_mcp_server(hang_server(started, cancelled)) as url:
        connection = McpServerConnection.http(url, name="hang")
        provider: Any = (
            McpToolCallbackProvider(connection) if kind == "thread-backed" else AsyncMcpToolCallbackProvider(connection)
        )
        client = ChatClient.create(ScriptedChatModel(calling("hang")))
        request = asyncio.ensure_future(client.prompt("Hang").tools(provider).acall().content())
        assert await asyncio.to_thread(started.wait, 5), "the remote tool began"
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert await asyncio.to_thread(cancelled.wait, 1), "the server saw the cancellation within 1 s"
        echo = ChatClient.create(ScriptedChatModel(calling("echo", {"text": "still here"})))
        assert await echo.prompt("Echo").tools(provider).acall().content() == "still here"
        await provider.aclose() if kind == "async" else provider.close()


def test_a_sync_caller_that_gives_up_cancels_the_work_on_the_runtime_and_the_runtime_goes_on() -> None:
    from chatclient.mcp.provider import _Runtime

    runtime = _Runtime()

    async def forever() -> str:
        await asyncio.Event().wait()
        return "never"

    async def others_left() -> list[asyncio.Task[Any]]:
        # the runtime runs its callbacks in order: the abandoned task's cancellation came first
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]

    try:
        with pytest.raises(TimeoutError, match="did not answer"):
            runtime.run(forever(), timeout=0)
        assert runtime.run(others_left(), timeout=5) == [], "the abandoned call was cancelled, not left running"
        with pytest.raises(ZeroDivisionError):
            runtime.run(_raising(), timeout=5)
    finally:
        runtime.loop.call_soon_threadsafe(runtime.loop.stop)
        runtime.thread.join(5)
        runtime.loop.close()


async def _raising() -> None:
    raise ZeroDivisionError


def test_close_ends_the_runtime_thread(url: str) -> None:
    provider = McpToolCallbackProvider(McpServerConnection.http(url, name="demo"))
    provider.get_tool_callbacks()
    runtime = provider._runtime
    assert runtime is not None and runtime.thread.is_alive()
    provider.close()
    assert not runtime.thread.is_alive()


@pytest.mark.parametrize("mode", MODES)
def test_a_protocol_error_is_raised_by_default_and_told_to_the_model_when_configured(mode: str, url: str) -> None:
    connection = McpServerConnection.http(url, name="demo")
    with McpToolCallbackProvider(connection) as strict:
        model = ScriptedChatModel(calling("broken"))
        with pytest.raises(McpProtocolError, match="broken on purpose") as raised:
            run_spec(mode, ChatClient.create(model).prompt("Go").tools(strict))
        assert raised.value.server_name == "demo" and raised.value.code == -32602
    with McpToolCallbackProvider(connection, protocol_errors_to_model=True) as lenient:
        model = ScriptedChatModel(calling("broken"))
        response, _ = run_spec(mode, ChatClient.create(model).prompt("Go").tools(lenient))
        assert response.chat_response is not None and "broken on purpose" in (response.chat_response.text or "")
        assert last_responses(model)[0].is_error


def test_fifty_threads_share_one_sync_provider(provider: McpToolCallbackProvider) -> None:
    add = {c.name: c for c in provider.get_tool_callbacks()}["add"]
    results: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(50)

    def worker(i: int) -> None:
        try:
            start.wait(10)
            results.append(add.call(f'{{"a": {i}, "b": 1}}').text)  # type: ignore[union-attr]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert sorted(int(r) for r in results) == list(range(1, 51))
    assert CALLS == {"add": 50}
