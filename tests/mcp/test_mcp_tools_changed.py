"""A server's tool list changes: the provider lists again on the next request (modern: a
``subscriptions/listen`` stream; legacy: the ``tools/list_changed`` notification)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from chatclient.mcp import McpServerConnection, McpToolCallbackProvider
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
