"""S9 (MCP): one MCP tool round through the chat loop against a bare ``mcp.Client.call_tool``.

The same loopback MCP server (socket ``IPPROTO_TCP``, see ``chatclient.testing.mcp``) answers
everyone. The floor is one ``call_tool`` on an open session; chatclient runs a whole tool round: the
scripted model asks for the tool, the loop calls it over MCP, the model answers. Budgets: the
thread-backed provider <= 1.2x the floor, the async provider <= 1.05x. Needs ``chatclient[mcp]``:

    .venv/bin/python -m benchmarks.mcp_round [--rounds 7 --ops 300]
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from .harness import Series, close_loop, measure, run_async


def _server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")

    @server.tool(description="Add two numbers")
    async def add(a: int, b: int) -> str:
        return str(a + b)

    return server


def _script(prompt: Any) -> Any:
    from chatclient import AssistantMessage, ToolResponseMessage
    from chatclient.testing import tool_call

    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return last.responses[0].response_data
    return AssistantMessage(None, tool_calls=[tool_call("add", {"a": 2, "b": 3})])


def main() -> None:
    from chatclient import ChatClient
    from chatclient.mcp import AsyncMcpToolCallbackProvider, McpServerConnection, McpToolCallbackProvider
    from chatclient.mcp.connection import McpSession
    from chatclient.testing import ScriptedChatModel
    from chatclient.testing.mcp import running_mcp_server

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    with running_mcp_server(_server()) as url, contextlib.ExitStack() as stack:
        connection = McpServerConnection.http(url, name="bench")
        session = McpSession(connection)  # an owner task keeps the bare client open on the harness loop
        run_async(session.open())
        bare = session.client
        threaded = stack.enter_context(McpToolCallbackProvider(connection))
        loop_bound = AsyncMcpToolCallbackProvider(connection)
        run_async(loop_bound.tool_callbacks())
        client = ChatClient.create(ScriptedChatModel(_script))
        sync_spec = client.prompt("2+3?").tools(threaded)
        async_spec = client.prompt("2+3?").tools(loop_bound)

        async def bare_call() -> str:
            result = await bare.call_tool("add", {"a": 2, "b": 3})
            return str(result.content[0].text)

        async def async_round() -> str | None:
            return await async_spec.acall().content()

        async def threaded_async_round() -> str | None:
            return await sync_spec.acall().content()

        ok = lambda result: None if result[0] == "5" else f"got {result[0]!r}"  # noqa: E731
        series = [
            Series("mcp.Client.call_tool", "mcp", "async", op=bare_call, is_async=True, check=ok),
            Series("chatclient async provider", "mcp", "async", op=async_round, is_async=True, check=ok),
            Series("chatclient thread-backed", "mcp", "async", op=threaded_async_round, is_async=True, check=ok),
            Series("chatclient thread-backed", "mcp", "sync", op=lambda: sync_spec.call().content(), check=ok),
        ]
        measure(series, rounds=args.rounds, ops=args.ops, seconds=args.seconds, warmup=20)
        floor = series[0].median()
        print(f"{'series':44} {'median µs':>10} {'p90 µs':>9} {'x floor':>8}")
        for s in series:
            if not s.ok:
                print(f"{s.lib + ' (' + s.mode + ')':44} {s.na}")
                continue
            label = f"{s.lib} ({s.mode})"
            print(f"{label:44} {s.median() / 1e3:10.0f} {s.p90() / 1e3:9.0f} {s.median() / floor:8.2f}")
        run_async(loop_bound.aclose())
        run_async(session.close())
    close_loop()


if __name__ == "__main__":
    main()
