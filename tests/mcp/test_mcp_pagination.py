"""Listing walks every page of a low-level server's tools, and stops at the cap when the cursor never ends."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp import types
from mcp.server.lowlevel import Server

from chatclient.mcp import McpServerConnection, McpToolCallbackProvider
from chatclient.testing.mcp import running_mcp_server


def paged_server(pages: int | None) -> Any:
    """Three tools a page over ``pages`` pages (``None``: the cursor never ends)."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        tools = [
            types.Tool(name=f"p{page}_t{i}", description="paged", input_schema={"type": "object"}) for i in range(3)
        ]
        last = pages is not None and page + 1 >= pages
        return types.ListToolsResult(tools=tools, next_cursor=None if last else str(page + 1))

    return Server("paged", on_list_tools=list_tools)


def test_every_page_is_listed() -> None:
    with (
        running_mcp_server(paged_server(3)) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="paged")) as provider,
    ):
        names = [c.name for c in provider.get_tool_callbacks()]
    assert names == [f"p{p}_t{i}" for p in range(3) for i in range(3)]


def test_a_cursor_that_never_ends_stops_at_the_cap_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="chatclient.mcp.connection"),
        running_mcp_server(paged_server(None)) as url,
        McpToolCallbackProvider(McpServerConnection.http(url, name="endless"), max_tools_per_server=None) as provider,
    ):
        assert len(provider.get_tool_callbacks()) == 300
    assert "more than 100 pages" in caplog.text
