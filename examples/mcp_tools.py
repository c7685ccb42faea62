"""MCP both ways, offline: serve decorated tools over Streamable HTTP on 127.0.0.1, then give an
MCP server's tools to a ChatClient. The model is scripted; the MCP traffic is real.

Needs the extra: ``pip install 'chatclient[mcp]'``. Run: ``python examples/mcp_tools.py``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage, UserMessage
from chatclient.mcp import McpServerConnection, McpToolCallbackProvider, build_mcp_server, mcp_tool
from chatclient.testing import ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.mcp import running_mcp_server
from chatclient.tools import ToolCallDecision, ToolCallDecisions, awaiting_decision


@mcp_tool(read_only=True)
def forecast(city: Annotated[str, Field(description="City name")]) -> str:
    """Tomorrow's weather for a city."""
    return f"{city}: sunny, 24°C"


@mcp_tool(destructive=True)
def cancel_trip(city: str) -> str:
    """Cancel the trip to a city."""
    return f"Trip to {city} cancelled"


def model(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " / ".join(r.response_data for r in last.responses)
    name = "cancel_trip" if isinstance(last, UserMessage) and "Cancel" in last.text else "forecast"
    return AssistantMessage(None, tool_calls=[tool_call(name, {"city": "Lisbon"}, id="c1")])


def main() -> None:
    server = build_mcp_server(forecast, cancel_trip, name="travel")  # serve(server) runs it for real
    with running_mcp_server(server) as url:
        connection = McpServerConnection.http(url, name="travel")
        with McpToolCallbackProvider(connection, require_confirmation={"cancel_trip"}) as travel:
            client = ChatClient.builder(ScriptedChatModel(model)).default_tools(travel).build()
            print("answer:", client.prompt("Weather in Lisbon?").call().content())

            paused = client.prompt("Cancel Lisbon").call().chat_client_response()
            pending = awaiting_decision(paused)
            assert pending is not None
            print("paused before any MCP request; awaiting:", pending.awaiting_ids)
            allow = ToolCallDecisions.of(ToolCallDecision.allow("c1"))
            print("resumed:", client.prompt().resume(pending, allow).call().content())


if __name__ == "__main__":
    main()
