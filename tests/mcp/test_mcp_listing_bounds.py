"""A server's tool listing cannot fill every request: the tools offered per server, a description's
length and an input schema's size are bounded, each cut said with an ``McpUnsafeWarning``, and each
bound is the provider's to set. A low-level SDK server (it lists whatever it is given) on 127.0.0.1."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, Prompt
from chatclient.mcp import McpServerConnection, McpToolCallbackProvider, McpUnsafeWarning
from chatclient.mcp.limits import (
    DEFAULT_MAX_DESCRIPTION_CHARS,
    DEFAULT_MAX_SCHEMA_CHARS,
    DEFAULT_MAX_TOOLS_PER_SERVER,
    ListingLimits,
)
from chatclient.testing import ScriptedChatModel, ScriptItem
from chatclient.testing.mcp import running_mcp_server

TOOL_COUNT = 302
HUGE_DESCRIPTION = "D" * 1_200_000
BIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(400)},
}


def crowded_server() -> Any:
    """302 tools: ``t000`` with a 1.2 MB description, ``t001`` with a ~50 kB input schema."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    def listed(i: int) -> types.Tool:
        description = HUGE_DESCRIPTION if i == 0 else f"tool {i}"
        schema = BIG_SCHEMA if i == 1 else {"type": "object", "properties": {}}
        return types.Tool(name=f"t{i:03}", description=description, input_schema=schema)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[listed(i) for i in range(TOOL_COUNT)])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("crowded", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_mcp_server(crowded_server()) as served:
        yield served


def connection(url: str) -> McpServerConnection:
    return McpServerConnection.http(url, name="crowded")


def test_the_defaults_bound_the_listing_and_say_what_was_cut(url: str) -> None:
    assert len(json.dumps(BIG_SCHEMA, separators=(",", ":"))) > DEFAULT_MAX_SCHEMA_CHARS
    with pytest.warns(McpUnsafeWarning) as seen, McpToolCallbackProvider(connection(url)) as provider:
        tools = {t.name: t for t in provider.get_tool_callbacks()}
    schema_cut, count_cut, description_cut = (str(w.message) for w in seen)
    assert "'t001'" in schema_cut and "over max_schema_chars=32,000" in schema_cut
    assert "offers 301 tools, over max_tools_per_server=128: only its first 128 are offered" in count_cut
    assert "the description of 1 tool(s) is over max_description_chars=4,000 and was cut: ['t000']" in description_cut
    assert len(tools) == DEFAULT_MAX_TOOLS_PER_SERVER
    assert "t001" not in tools, "a schema is left out whole, never cut"
    assert list(tools)[-1] == "t128", "the first tools the server lists, in its order"
    description = tools["t000"].definition.description
    assert description.startswith("D" * DEFAULT_MAX_DESCRIPTION_CHARS)
    assert description.endswith(f" [... {len(HUGE_DESCRIPTION) - DEFAULT_MAX_DESCRIPTION_CHARS:,} characters cut]")
    assert len(description) < DEFAULT_MAX_DESCRIPTION_CHARS + 50


def test_what_a_request_sends_is_bounded(url: str) -> None:
    def sizes(prompt: Prompt) -> ScriptItem:
        definitions = [t.definition for t in prompt.tool_callbacks]
        return AssistantMessage(f"{len(definitions)} {sum(len(d.model_dump_json()) for d in definitions)}")

    with warnings.catch_warnings(), McpToolCallbackProvider(connection(url)) as provider:
        warnings.simplefilter("ignore", McpUnsafeWarning)
        answer = ChatClient.create(ScriptedChatModel(sizes)).prompt("hi").tools(provider).call().content()
    count, total = map(int, (answer or "").split())
    assert count == DEFAULT_MAX_TOOLS_PER_SERVER
    assert total < 60_000, "not the 1.2 MB the server listed"


def test_each_bound_is_the_providers_to_set(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with McpToolCallbackProvider(
            connection(url), max_tools_per_server=None, max_description_chars=None, max_schema_chars=None
        ) as provider:
            unbounded = {t.name: t for t in provider.get_tool_callbacks()}
    assert len(unbounded) == TOOL_COUNT
    assert unbounded["t000"].definition.description == HUGE_DESCRIPTION
    assert unbounded["t001"].definition.input_schema == BIG_SCHEMA

    with (
        pytest.warns(McpUnsafeWarning) as seen,
        McpToolCallbackProvider(
            connection(url), max_tools_per_server=5, max_description_chars=3, max_schema_chars=None
        ) as provider,
    ):
        small = provider.get_tool_callbacks()
    assert ["max_tools_per_server=5" in str(w.message) for w in seen] == [True, False]
    assert "the description of 5 tool(s) is over max_description_chars=3" in str(seen[1].message)
    assert [t.name for t in small] == ["t000", "t001", "t002", "t003", "t004"]
    assert small[2].definition.description == "too [... 3 characters cut]"


def test_the_filter_chooses_before_the_count_is_bounded(url: str) -> None:
    late = {"t250", "t301"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with McpToolCallbackProvider(connection(url), tool_filter=lambda server, tool: tool.name in late) as provider:
            assert {t.name for t in provider.get_tool_callbacks()} == late


@pytest.mark.parametrize("bad", [-1, True, 2.5, "10"])
def test_a_bound_that_is_not_a_count_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_description_chars must be a non-negative int or None"):
        ListingLimits(max_description_chars=bad)
    with pytest.raises(ValueError, match="max_tools_per_server must be a non-negative int or None"):
        McpToolCallbackProvider(McpServerConnection.http("http://127.0.0.1:9/mcp", name="x"), max_tools_per_server=bad)
