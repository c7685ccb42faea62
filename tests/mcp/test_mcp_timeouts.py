"""Connecting, listing, reading and prompting are bounded: a server that accepts and never answers,
a stdio child that never speaks MCP, and a server that stalls one request each end in one
``McpConnectionError`` naming the server and the limit. Small limits; the tests assert the error,
never a clock."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from chatclient import ChatClient
from chatclient.mcp import (
    AsyncMcpToolCallbackProvider,
    McpConnectionError,
    McpServerConnection,
    McpToolCallbackProvider,
)
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import running_mcp_server


@pytest.fixture
def mute_url() -> Iterator[str]:
    """A loopback socket that accepts connections and never reads or answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.05)  # so the accepting thread sees ``stop``
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        stop.set()
        thread.join(5)
        sock.close()
        for conn in accepted:
            conn.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_server_that_never_answers_fails_the_request_at_the_connect_limit(mode: str, mute_url: str) -> None:
    connection = McpServerConnection.http(mute_url, name="mute", call_timeout_s=30, connect_timeout_s=0.3)
    with McpToolCallbackProvider(connection) as provider:
        spec = ChatClient.create(ScriptedChatModel(["hi"])).prompt("hi").tools(provider)
        with pytest.raises(McpConnectionError, match=r"'mute'.*connect_timeout_s=0.3 s") as raised:
            run_spec(mode, spec)
    assert raised.value.server_name == "mute" and isinstance(raised.value.cause, TimeoutError)


async def test_the_async_provider_is_bounded_too(mute_url: str) -> None:
    connection = McpServerConnection.http(mute_url, name="mute", connect_timeout_s=0.3)
    provider = AsyncMcpToolCallbackProvider(connection)
    with pytest.raises(McpConnectionError, match=r"connect_timeout_s=0\.3 s"):
        await provider.tool_callbacks()
    await provider.aclose()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_stdio_child_that_never_speaks_mcp_fails_and_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    connection = McpServerConnection.stdio(sys.executable, ["-c", script], name="wedged", connect_timeout_s=1)
    with McpToolCallbackProvider(connection) as provider:
        with pytest.raises(McpConnectionError, match=r"'wedged'.*connect_timeout_s=1 s"):
            provider.get_tool_callbacks()
        pid = int(pid_file.read_text())
        assert _gone(pid), "the child was stopped before the error was raised"


def stalling_server(release: threading.Event) -> Any:
    """Answers the handshake; its listing, resource and prompt wait until ``release`` is set."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("stalling", log_level="WARNING")

    async def stall() -> None:
        while not release.is_set():
            await anyio.sleep(0.05)

    @server.resource("note://stuck", mime_type="text/plain")
    async def stuck() -> str:
        await stall()
        return "late"

    @server.prompt(description="Never rendered in time")
    async def slow_prompt() -> str:
        await stall()
        return "late"

    @server.tool(description="Fine, once listed")
    def fine() -> str:
        return "fine"

    async def stalled_listing() -> Any:
        await stall()
        return []

    server.list_tools = stalled_listing  # type: ignore[method-assign]  # a listing that stalls
    return server


@pytest.fixture
def stalling_url() -> Iterator[str]:
    release = threading.Event()
    try:
        with running_mcp_server(stalling_server(release)) as url:
            yield url
            release.set()
    finally:
        release.set()


def test_a_listing_resource_read_and_prompt_that_never_answer_are_bounded(stalling_url: str) -> None:
    # connect_timeout_s bounds the handshake too: 2 s, so a loaded machine still completes it
    connection = McpServerConnection.http(stalling_url, name="stalling", call_timeout_s=0.3, connect_timeout_s=2)
    with McpToolCallbackProvider(connection) as provider:
        with pytest.raises(McpConnectionError, match=r"'stalling'.*'tools/list' within connect_timeout_s=2 s"):
            provider.get_tool_callbacks()
        with pytest.raises(McpConnectionError, match=r"'note://stuck' within call_timeout_s=0.3 s"):
            provider.read_resource("stalling", "note://stuck")
        with pytest.raises(McpConnectionError, match=r"'slow_prompt' within call_timeout_s=0.3 s"):
            provider.get_prompt("stalling", "slow_prompt")


async def test_async_reads_and_prompts_are_bounded(stalling_url: str) -> None:
    connection = McpServerConnection.http(stalling_url, name="stalling", call_timeout_s=0.3, connect_timeout_s=2)
    with McpToolCallbackProvider(connection) as provider:
        with pytest.raises(McpConnectionError, match=r"call_timeout_s=0\.3 s"):
            await provider.aread_resource("stalling", "note://stuck")
        with pytest.raises(McpConnectionError, match=r"call_timeout_s=0\.3 s"):
            await provider.aget_prompt("stalling", "slow_prompt")
