"""S9 (MCP): one MCP tool round through the chat loop against a bare ``mcp.Client.call_tool``.

The same loopback MCP server (socket ``IPPROTO_TCP``, see ``chatclient.testing.mcp``) answers
everyone. The floor is one ``call_tool`` on an open session; chatclient runs a whole tool round: the
scripted model asks for the tool, the loop calls it over MCP, the model answers. Budgets: the
thread-backed provider <= 1.2x the floor, the async provider <= 1.05x. A last series runs the same
round with a local ``async def`` tool and no network: the chat loop's own share of every round (two
model calls, the tool loop), which no MCP change can remove. The series "MCP tool callback alone"
is one ``McpToolCallback.acall`` of the async provider (arguments parsed, the call with its timeout,
the result mapped to a ``ToolResult``), without the chat loop: the MCP adaptation's own share.

The server runs in a child process by default, as MCP servers do; ``--in-process`` runs it on a thread
of this process instead, where it competes with the client for the GIL (every client syscall can then
hand the GIL to the server thread for a while), which inflates client-side work. Needs ``chatclient[mcp]``:

    .venv/bin/python -m benchmarks.mcp_round [--rounds 9 --ops 300 --seconds 3] [--in-process] [--blocks]

Series are interleaved op by op (``--blocks``: the harness's blocks of ``--ops`` per series instead).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from .harness import Series, close_loop, measure, run_async, validate, warmed


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


def _serve_child() -> None:
    """The child process: serve until stdin closes, after printing the URL."""
    from chatclient.testing.mcp import running_mcp_server

    with running_mcp_server(_server()) as url:
        print(url, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def _served(in_process: bool) -> Iterator[str]:
    if in_process:
        from chatclient.testing.mcp import running_mcp_server

        with running_mcp_server(_server()) as url:
            yield url
        return
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.mcp_round", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        child.wait(20)


def measure_paired(series: Sequence[Series], *, rounds: int, ops: int, seconds: float, warmup: int) -> None:
    """Like ``harness.measure``, but interleaved op by op: in each round every series runs one op in
    turn (the order rotating), ``ops`` times or for ``seconds`` per series. On a shared machine the
    load changes from second to second; blocks of a few hundred ops (a second or more each) then
    land on different loads, while neighbouring single ops share one. An async op is timed inside
    the loop (``run_async``'s own cost is outside the sample)."""
    validate(series)
    live = warmed(series, warmup, seconds)
    clock = time.perf_counter_ns

    async def timed(op: Any) -> int:
        start = clock()
        await op()
        return clock() - start

    def one(s: Series) -> int:
        assert s.op is not None
        if s.is_async:
            return int(run_async(timed(s.op)))
        start = clock()
        s.op()
        return clock() - start

    gc.collect()
    gc.freeze()
    try:
        for _ in range(rounds):
            gc.collect()
            deadline = clock() + int(seconds * len(live) * 1e9)
            for i in range(ops):
                shift = i % len(live)
                for s in live[shift:] + live[:shift]:
                    s.samples.append(one(s))
                if clock() > deadline:
                    break
    finally:
        gc.unfreeze()


def main() -> None:
    from chatclient import ChatClient, tool
    from chatclient.mcp import AsyncMcpToolCallbackProvider, McpServerConnection, McpToolCallbackProvider
    from chatclient.mcp.connection import McpSession
    from chatclient.testing import ScriptedChatModel

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--in-process", action="store_true", help="serve on a thread of this process")
    parser.add_argument("--blocks", action="store_true", help="time each series in blocks of --ops, not op by op")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve_child()
        return

    with _served(args.in_process) as url, contextlib.ExitStack() as stack:
        connection = McpServerConnection.http(url, name="bench")
        session = McpSession(connection)  # an owner task keeps the bare client open on the harness loop
        run_async(session.open())
        bare = session.client
        threaded = stack.enter_context(McpToolCallbackProvider(connection))
        loop_bound = AsyncMcpToolCallbackProvider(connection)
        (mcp_add,) = run_async(loop_bound.tool_callbacks())
        client = ChatClient.create(ScriptedChatModel(_script))
        sync_spec = client.prompt("2+3?").tools(threaded)

        @tool(description="Add two numbers")
        async def add(a: int, b: int) -> str:
            return str(a + b)

        local_spec = client.prompt("2+3?").tools(add)
        async_spec = client.prompt("2+3?").tools(loop_bound)

        async def bare_call() -> str:
            result = await bare.call_tool("add", {"a": 2, "b": 3})
            return str(result.content[0].text)

        async def callback_alone() -> str:
            result = await mcp_add.acall('{"a": 2, "b": 3}')
            return result if isinstance(result, str) else result.text

        async def async_round() -> str | None:
            return await async_spec.acall().content()

        async def threaded_async_round() -> str | None:
            return await sync_spec.acall().content()

        async def local_round() -> str | None:
            return await local_spec.acall().content()

        ok = lambda result: None if result[0] == "5" else f"got {result[0]!r}"  # noqa: E731
        series = [
            Series("mcp.Client.call_tool", "mcp", "async", op=bare_call, is_async=True, check=ok),
            Series("MCP tool callback alone", "mcp", "async", op=callback_alone, is_async=True, check=ok),
            Series("chatclient async provider", "mcp", "async", op=async_round, is_async=True, check=ok),
            Series("chatclient thread-backed", "mcp", "async", op=threaded_async_round, is_async=True, check=ok),
            Series("chatclient thread-backed", "mcp", "sync", op=lambda: sync_spec.call().content(), check=ok),
            Series("chat loop alone (local tool)", "none", "async", op=local_round, is_async=True, check=ok),
        ]
        if args.blocks:
            measure(series, rounds=args.rounds, ops=args.ops, seconds=args.seconds, warmup=20)
        else:
            measure_paired(series, rounds=args.rounds, ops=args.ops, seconds=args.seconds, warmup=20)
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
