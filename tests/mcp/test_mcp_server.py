"""Serving over MCP: a server built only with chatclient's decorators, listed and called by the
official ``mcp.Client`` over Streamable HTTP on 127.0.0.1 (modern and legacy, stateful and stateless)."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

from chatclient.mcp import (
    AsyncMcpToolCallbackProvider,
    McpProtocolError,
    McpServerConnection,
    McpToolCallbackProvider,
    build_mcp_server,
    serve,
)
from chatclient.testing.mcp import running_mcp_server
from tests.mcp.decorated import build


async def exercise(server: Any, mode: str) -> None:
    """``server``: a URL, or ``StdioServerParameters`` of a child process."""
    import mcp

    async with mcp.Client(server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["explode", "forecast", "refuse", "shout"]
        forecast = tools["forecast"]
        assert forecast.description == "Tomorrow's weather.\n\nFor one city."
        assert forecast.input_schema["properties"]["city"]["description"] == "City name"
        assert forecast.input_schema["required"] == ["city"]
        assert forecast.annotations is not None and forecast.annotations.read_only_hint is True
        ok = await client.call_tool("forecast", {"city": "Paris", "days": 2})
        assert not ok.is_error and ok.content[0].text == "Paris: sunny for 2 days"  # type: ignore[union-attr]
        crash = await client.call_tool("explode", {})
        assert crash.is_error and "secret" not in crash.content[0].text  # type: ignore[union-attr]
        refused = await client.call_tool("refuse", {})
        assert refused.is_error and "not today" in refused.content[0].text  # type: ignore[union-attr]
        shouted = await client.call_tool("shout", {"word": "hi"})
        assert shouted.content[0].text == "HI"  # type: ignore[union-attr]
        read = await client.read_resource("cities://fr")
        (content,) = read.contents
        assert content.mime_type == "application/json" and content.text == '["Paris", "Lyon"]'  # type: ignore[union-attr]
        prompt = await client.get_prompt("ask_weather", {"city": "Rome"})
        assert prompt.messages[0].content.text == "What is the weather in Rome?"  # type: ignore[union-attr]


@pytest.mark.parametrize("stateless", [False, True])
def test_the_official_client_lists_and_calls_the_decorated_server(stateless: bool) -> None:
    server, weather = build()
    with running_mcp_server(server, stateless=stateless) as url:
        for mode in ("auto", "legacy"):
            asyncio.run(exercise(url, mode))
    assert weather.calls == 2


def test_the_official_client_uses_the_decorated_server_as_a_stdio_child() -> None:
    import mcp

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    child = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "tests.mcp.decorated"], cwd=root, env={"PYTHONPATH": root}
    )
    for mode in ("auto", "legacy"):
        asyncio.run(exercise(child, mode))


def test_chatclients_own_provider_calls_the_decorated_server() -> None:
    server, weather = build()
    with (
        running_mcp_server(server) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="weather")) as provider,
    ):
        forecast = {c.name: c for c in provider.get_tool_callbacks()}["forecast"]
        assert forecast.call('{"city": "Oslo"}').text == "Oslo: sunny for 1 days"  # type: ignore[union-attr]
    assert weather.calls == 1


def test_a_source_with_nothing_marked_and_serve_inside_a_loop_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="has no @mcp_tool"):
        build_mcp_server(object())
    with pytest.raises(TypeError, match="not a @tool function"):
        build_mcp_server(tools=[lambda: None])

    async def inside() -> None:
        serve(build()[0])

    with pytest.raises(RuntimeError, match="inside a running event loop"):
        asyncio.run(inside())


async def test_resources_and_prompts_through_both_providers() -> None:
    server, _ = build()
    with running_mcp_server(server) as url:
        connection = McpServerConnection.http(url, name="weather")
        with McpToolCallbackProvider(connection) as threaded:
            assert threaded.read_resource("weather", "cities://fr").contents[0].text == '["Paris", "Lyon"]'
            prompt = await threaded.aget_prompt("weather", "ask_weather", {"city": "Rome"})
            assert prompt.messages[0].content.text == "What is the weather in Rome?"
            with pytest.raises(McpProtocolError, match="refused"):
                threaded.get_prompt("weather", "no_such_prompt")
            with pytest.raises(ValueError, match="No MCP server named 'other'"):
                threaded.read_resource("other", "cities://fr")
        async with AsyncMcpToolCallbackProvider(connection) as loop_bound:
            read = await loop_bound.read_resource("weather", "cities://xx")
            assert read.contents[0].text == "[]"


def _not_running(server: Any) -> list[dict[str, Any]]:
    """``server.run`` replaced by a recorder: the test checks what serve() says, not a bound port."""
    runs: list[dict[str, Any]] = []
    server.run = lambda transport, **options: runs.append({"transport": transport, **options})
    return runs


def test_serving_on_a_public_address_without_auth_warns() -> None:
    import warnings

    from chatclient.mcp import McpUnsafeWarning

    server = build()[0]
    runs = _not_running(server)
    with pytest.warns(McpUnsafeWarning, match="0.0.0.0 without auth"):
        serve(server, host="0.0.0.0", port=9)
    assert runs == [{"transport": "streamable-http", "host": "0.0.0.0", "port": 9, "streamable_http_path": "/mcp",
                     "stateless_http": False, "json_response": False}]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        serve(server, port=9)  # loopback: no warning


def test_serving_on_a_public_address_with_auth_does_not_warn() -> None:
    import warnings

    from mcp.server.auth.settings import AuthSettings

    server = build()[0]
    runs = _not_running(server)
    server.settings.auth = AuthSettings.model_validate(
        {
            "issuer_url": "https://auth.example",
            "resource_server_url": "https://mcp.example",
            "validate_token_resource": True,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        serve(server, host="0.0.0.0", port=9)
    assert len(runs) == 1
