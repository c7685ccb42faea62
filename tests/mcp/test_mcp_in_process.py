"""In-process connections: a server object in this process (ours, built with the decorators, or one
built only with the official SDK) used through the SDK's in-memory transport, no port, no child."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import AsyncMcpToolCallbackProvider, McpServerConnection, McpToolCallbackProvider
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallDecision, ToolCallDecisions, awaiting_decision
from tests.mcp.decorated import build
from tests.mcp.servers import demo_server
from tests.mcp.test_mcp_confirmation import cities_server, delete_and_lookup


def forecast_paris(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return last.responses[0].response_data
    return AssistantMessage(None, tool_calls=[tool_call("forecast", {"city": "Paris", "days": 2})])


@pytest.mark.parametrize("mode", MODES)
def test_our_decorated_server_in_process(mode: str) -> None:
    server, weather = build()
    with McpToolCallbackProvider(McpServerConnection.in_process(server, name="weather")) as provider:
        names = sorted(c.name for c in provider.get_tool_callbacks())
        assert names == ["explode", "forecast", "refuse", "shout"]
        final, _ = run_spec(mode, ChatClient.create(ScriptedChatModel(forecast_paris)).prompt("Paris?").tools(provider))
        assert provider.read_resource("weather", "cities://fr").contents[0].text == '["Paris", "Lyon"]'
        prompt = provider.get_prompt("weather", "ask_weather", {"city": "Rome"})
        assert prompt.messages[0].content.text == "What is the weather in Rome?"
    assert final.chat_response is not None and final.chat_response.text == "Paris: sunny for 2 days"
    assert weather.calls == 1


@pytest.mark.parametrize("mode", MODES)
def test_an_official_sdk_server_in_process(mode: str) -> None:
    calls: Counter[str] = Counter()
    add = AssistantMessage(None, tool_calls=[tool_call("add", {"a": 2, "b": 3})])

    def script(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        return last.responses[0].response_data if isinstance(last, ToolResponseMessage) else add

    connection = McpServerConnection.in_process(demo_server(calls=calls), name="demo")
    with McpToolCallbackProvider(connection) as provider:
        final, _ = run_spec(mode, ChatClient.create(ScriptedChatModel(script)).prompt("2+3?").tools(provider))
    assert final.chat_response is not None and final.chat_response.text == "5"
    assert calls == {"add": 1}


def test_a_low_level_sdk_server_in_process() -> None:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"word": {"type": "string"}}}
        return types.ListToolsResult(tools=[types.Tool(name="echo", description="Echo", input_schema=schema)])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        word = (params.arguments or {}).get("word", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"echo {word}")])

    server = Server("low", on_list_tools=list_tools, on_call_tool=call_tool)
    with McpToolCallbackProvider(McpServerConnection.in_process(server, name="low")) as provider:
        (echo,) = provider.get_tool_callbacks()
        assert echo.call('{"word": "hi"}').text == "echo hi"  # type: ignore[union-attr]


async def test_the_async_provider_in_process_with_confirmation() -> None:
    calls: Counter[str] = Counter()
    connection = McpServerConnection.in_process(cities_server(calls), name="cities")
    async with AsyncMcpToolCallbackProvider(connection, require_confirmation={"delete_city"}) as provider:
        client = ChatClient.builder(ScriptedChatModel(delete_and_lookup)).default_tools(provider).build()
        pending = awaiting_decision(await client.prompt("Delete Paris").acall().chat_client_response())
        assert pending is not None and pending.awaiting_ids == ["d"] and calls == {}
        allow = ToolCallDecisions.of(ToolCallDecision.allow("d"), ToolCallDecision.allow("l"))
        answer = await client.prompt().resume(pending, allow).acall().content()
    assert answer == "deleted Paris / Rome is fine"
    assert calls == {"delete_city": 1, "lookup": 1}


def test_a_connection_names_exactly_one_place() -> None:
    with pytest.raises(ValueError, match="exactly one of url, command or server"):
        McpServerConnection(name="x", url="http://127.0.0.1:1/mcp", server=object())
