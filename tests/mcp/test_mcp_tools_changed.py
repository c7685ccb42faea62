"""A server's tool list changes: the provider lists again on the next request (modern: a
``subscriptions/listen`` stream; legacy: the ``tools/list_changed`` notification)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import McpServerConnection, McpToolCallbackProvider
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import running_mcp_server


def growing_server() -> Any:
    server = MCPServer("growing", log_level="WARNING")

    @server.tool(description="Adds the tool 'extra' and says so")
    async def grow(ctx: Context) -> str:
        server.add_tool(lambda: "extra ok", name="extra", description="Added later")
        await ctx.notify_tools_changed()  # modern listeners
        await ctx.request_context.session.send_tool_list_changed()  # legacy sessions
        return "grown"

    return server


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_published_change_reaches_the_next_request(mode: str) -> None:
    with (
        running_mcp_server(growing_server()) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="growing", mode=mode)) as provider,
    ):
        before = {c.name: c for c in provider.get_tool_callbacks()}
        assert sorted(before) == ["grow"]
        assert before["grow"].call("{}").text == "grown"  # type: ignore[union-attr]
        seen = threading.Event()
        for _ in range(200):  # bounded: the notification arrives within 2 s
            if "extra" in {c.name for c in provider.get_tool_callbacks()}:
                seen.set()
                break
            threading.Event().wait(0.01)
        assert seen.is_set(), "the change reached the provider"


def changed(provider: McpToolCallbackProvider) -> bool:
    """Wait (bounded: the notification arrives within 2 s) until the provider heard of the change."""
    for _ in range(200):
        if provider._catalog.callbacks is None:
            return True
        threading.Event().wait(0.01)
    return False


def grow_then_answer(provider: McpToolCallbackProvider) -> Any:
    """Call ``grow``; in the next round, once the provider knows the list changed, name the tools offered."""

    def script(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            assert changed(provider), "the change arrived while the turn was under way"
            return ",".join(t.name for t in prompt.tool_callbacks)
        return AssistantMessage(None, tool_calls=[tool_call("grow")])

    return script


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_a_request_under_way_keeps_its_tools_and_the_next_one_sees_the_change(mode: str, protocol: str) -> None:
    with (
        running_mcp_server(growing_server()) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="growing", mode=protocol)) as provider,
    ):
        model = ScriptedChatModel(grow_then_answer(provider))
        response, _ = run_spec(mode, ChatClient.create(model).prompt("Grow").tools(provider))
        assert response.chat_response is not None and response.chat_response.text == "grow", "same set mid-turn"
        later = ScriptedChatModel(["done"])
        run_spec(mode, ChatClient.create(later).prompt("Tools?").tools(provider))
        assert sorted(t.name for t in later.prompts[0].tool_callbacks) == ["extra", "grow"]
