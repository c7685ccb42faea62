"""Tool context -> MCP ``_meta``: nothing by default, chosen keys on request, reserved keys never."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import McpMeta, McpServerConnection, McpToolCallbackProvider, build_mcp_server, mcp_tool
from chatclient.testing import ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.mcp import running_mcp_server
from chatclient.tools import ToolContext

RESERVED = "io.modelcontextprotocol/"


def meta_server() -> Any:
    server = MCPServer("meta", log_level="WARNING")

    @server.tool(description="The request _meta the server received, as JSON")
    def seen(ctx: Context) -> str:
        meta = ctx.request_context.meta or {}
        items = meta.items() if isinstance(meta, dict) else meta.model_dump(by_alias=True).items()
        received = dict(items)
        forged = [key for key, value in received.items() if key.startswith(RESERVED) and value == "forged"]
        assert not forged, f"a reserved key reached the server: {forged}"
        return json.dumps({key: value for key, value in received.items() if not key.startswith(RESERVED)})

    return server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_mcp_server(meta_server()) as served:
        yield served


def ask(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return last.responses[0].response_data
    return AssistantMessage(None, tool_calls=[tool_call("seen")])


CONTEXT = {"tenant": "acme", "user_token": "secret", RESERVED + "protocolVersion": "forged"}


@pytest.mark.parametrize(
    ("forwarding", "expected"),
    [(None, {}), (McpMeta.keys("tenant"), {"tenant": "acme"}), (McpMeta.forward_all(), None)],
    ids=["default-nothing", "chosen-keys", "forward-all"],
)
def test_the_server_sees_only_the_chosen_context_keys(url: str, forwarding: Any, expected: Any) -> None:
    connection = McpServerConnection.http(url, name="meta")
    with McpToolCallbackProvider(connection, meta_from_context=forwarding) as provider:
        spec = ChatClient.create(ScriptedChatModel(ask)).prompt("Meta?").tools(provider).tool_context(CONTEXT)
        seen = json.loads(spec.call().content() or "null")
    if expected is None:
        assert seen == {"tenant": "acme", "user_token": "secret"}, "everything but the reserved key"
    else:
        assert seen == expected


@mcp_tool
def whoami(greeting: str, context: ToolContext) -> str:
    """Greets the tenant named in the tool context."""
    return f"{greeting}, {context.get('tenant', 'nobody')} ({sorted(context)})"


def test_a_served_tool_receives_the_forwarded_keys_as_its_tool_context() -> None:
    server = build_mcp_server(whoami, name="ctx")
    with running_mcp_server(server) as served:
        connection = McpServerConnection.http(served, name="ctx")
        with McpToolCallbackProvider(connection, meta_from_context=McpMeta.keys("tenant")) as provider:
            (callback,) = provider.get_tool_callbacks()
            hidden = {"greeting": {"title": "Greeting", "type": "string"}}
            assert callback.definition.input_schema["properties"] == hidden, "the context is not in the schema"
            model = ScriptedChatModel(calling_whoami)
            spec = ChatClient.create(model).prompt("Hi").tools(provider).tool_context(CONTEXT)
            assert spec.call().content() == "Hello, acme (['tenant'])"


def calling_whoami(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return last.responses[0].response_data
    return AssistantMessage(None, tool_calls=[tool_call("whoami", {"greeting": "Hello"})])


class _User:
    """A tool-context value that is not JSON (an application object)."""


WHEN = {"day": 3, "at": [1.5, None]}


@pytest.mark.parametrize(
    ("forwarding", "expected"),
    [(McpMeta.keys("tenant", "user"), {"tenant": "acme"}), (McpMeta.forward_all(), {"tenant": "acme", "when": WHEN})],
    ids=["keys", "all"],
)
def test_a_value_that_is_not_json_is_dropped_with_a_warning_and_the_call_goes_on(
    url: str, forwarding: Any, expected: dict[str, Any]
) -> None:
    from chatclient.mcp import McpUnsafeWarning

    connection = McpServerConnection.http(url, name="meta")
    context = {"tenant": "acme", "user": _User(), "when": WHEN}
    with McpToolCallbackProvider(connection, meta_from_context=forwarding) as provider:
        spec = ChatClient.create(ScriptedChatModel(ask)).prompt("Meta?").tools(provider).tool_context(context)
        with pytest.warns(McpUnsafeWarning, match=r"\['user'\] not sent to MCP server 'meta'"):
            seen = json.loads(spec.call().content() or "null")
    assert seen == expected
