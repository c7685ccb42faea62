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
``--series bare,async-pre,...`` picks series (the first is the floor); ``--instructions`` counts the
client's instructions per op of each instead (valgrind's callgrind; deterministic, where timings on a
shared machine are not). The ``-pre`` series run the same chat rounds with a model whose two replies are
built once (see ``SERIES``): the loop's work is all there, the test double's reply building is not.
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


SERIES = {
    "bare": ("mcp.Client.call_tool", "async"),
    "callback": ("MCP tool callback alone", "async"),
    "async": ("chatclient async provider", "async"),
    "threaded-async": ("chatclient thread-backed", "async"),
    "threaded-sync": ("chatclient thread-backed", "sync"),
    "local": ("chat loop alone (local tool)", "async"),
    "async-pre": ("chatclient async provider, prebuilt replies", "async"),
    "threaded-async-pre": ("chatclient thread-backed, prebuilt replies", "async"),
    "threaded-sync-pre": ("chatclient thread-backed, prebuilt replies", "sync"),
    "local-pre": ("chat loop alone (local tool), prebuilt replies", "async"),
    "hop-sync": ("thread hop alone (no-op coroutine)", "sync"),
    "hop-async": ("thread hop alone (no-op coroutine)", "async"),
}
"""Every series by key. The ``-pre`` ones run the same round with a model whose two replies are built
once (``loop_instructions.Prebuilt``): the loop still builds the request, runs the chain, parses the
tool call, runs the tool, records the history and makes the second call, but the test double's own
reply building (~0.17 M instructions a round with ``ScriptedChatModel``) is not counted as chatclient's.
The ``hop`` ones are the thread-backed provider's hop to its sessions' thread and back around a
coroutine that does nothing: what the thread-backed provider adds to a call, alone."""


@contextlib.contextmanager
def _ops(url: str) -> Iterator[dict[str, Any]]:
    """Each series' operation (a coroutine function, or a plain function for the sync ones)."""
    from chatclient import ChatClient, tool
    from chatclient.mcp import AsyncMcpToolCallbackProvider, McpServerConnection, McpToolCallbackProvider
    from chatclient.mcp.connection import McpSession
    from chatclient.testing import ScriptedChatModel

    from .loop_instructions import Prebuilt

    connection = McpServerConnection.http(url, name="bench")
    session = McpSession(connection)  # an owner task keeps the bare client open on the harness loop
    run_async(session.open())
    bare = session.client
    threaded = McpToolCallbackProvider(connection)
    loop_bound = AsyncMcpToolCallbackProvider(connection)
    (mcp_add,) = run_async(loop_bound.tool_callbacks())
    scripted = ChatClient.create(ScriptedChatModel(_script))
    prebuilt = ChatClient.create(Prebuilt("add"))

    @tool(description="Add two numbers")
    async def add(a: int, b: int) -> str:
        return str(a + b)

    def rounds(client: Any, tools: Any) -> tuple[Any, Any]:
        spec = client.prompt("2+3?").tools(tools)

        async def round_async() -> str | None:
            return await spec.acall().content()

        return round_async, lambda: spec.call().content()

    async def bare_call() -> str:
        result = await bare.call_tool("add", {"a": 2, "b": 3})
        return str(result.content[0].text)

    async def callback_alone() -> str:
        result = await mcp_add.acall('{"a": 2, "b": 3}')
        return result if isinstance(result, str) else result.text

    runtime = threaded._started()

    async def nothing() -> str:
        return "5"

    async def hop_async() -> str:
        return await runtime.arun(nothing())

    ops: dict[str, Any] = {
        "bare": bare_call,
        "callback": callback_alone,
        "hop-sync": lambda: runtime.run(nothing(), 60),
        "hop-async": hop_async,
    }
    for suffix, client in (("", scripted), ("-pre", prebuilt)):
        ops["async" + suffix] = rounds(client, loop_bound)[0]
        ops["threaded-async" + suffix], ops["threaded-sync" + suffix] = rounds(client, threaded)
        ops["local" + suffix] = rounds(client, add)[0]
    try:
        yield ops
    finally:
        threaded.close()
        run_async(loop_bound.aclose())
        run_async(session.close())


def _count_child(keys: Sequence[str], counts: Sequence[int]) -> None:
    """Under callgrind: for each series, warm up, then one dump after each of ``counts`` ops (zeroed first)."""
    import os

    pid = str(os.getpid())

    def control(*flags: str) -> None:
        subprocess.run(["callgrind_control", *flags, pid], stdout=subprocess.DEVNULL, check=True)

    with _served(False) as url, _ops(url) as ops:
        for key in keys:
            op, is_async = ops[key], SERIES[key][1] == "async"

            async def many(n: int, op: Any = op) -> None:
                for _ in range(n):
                    await op()

            def run(n: int, op: Any = op, is_async: bool = is_async) -> None:
                if is_async:
                    run_async(many(n))
                else:
                    for _ in range(n):
                        op()

            run(50)
            gc.collect()
            gc.freeze()  # as the timed runs do: what earlier series left is not scanned again in this one's window
            control("-i", "on")
            control("-z")
            for n in counts:
                run(n)
                control("-d", f"{key}-{n}")
            control("-i", "off")
            gc.unfreeze()
    close_loop()


def instructions(keys: Sequence[str], low: int = 100, high: int = 300) -> dict[str, float]:
    """Client instructions per op of each series: (dump after ``high`` ops - dump after ``low``) / (high - low).
    The server runs natively in its own child process (valgrind does not follow children)."""
    import glob
    import os
    import re
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        child = [sys.executable, "-m", "benchmarks.mcp_round", "--count-child", ",".join(keys), f"{low},{high}"]
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *child]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        totals: dict[str, int] = {}
        for path in glob.glob(out + "*"):
            with open(path) as file:
                text = file.read()
            trigger = re.search(r"^desc: Trigger: .*?([\w-]+-\d+)\s*$", text, re.M)
            total = re.search(r"^totals: (\d+)", text, re.M)
            if trigger and total:
                totals[trigger.group(1)] = totals.get(trigger.group(1), 0) + int(total.group(1))
    return {key: (totals[f"{key}-{high}"] - totals[f"{key}-{low}"]) / (high - low) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--in-process", action="store_true", help="serve on a thread of this process")
    parser.add_argument("--blocks", action="store_true", help="time each series in blocks of --ops, not op by op")
    parser.add_argument("--series", default=",".join(SERIES), help=f"comma-separated keys of {', '.join(SERIES)}")
    parser.add_argument("--instructions", action="store_true", help="count client instructions per op (callgrind)")
    parser.add_argument("--counts", default="100,300", help="with --instructions: the two op counts to difference")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve_child()
        return
    if args.count_child:
        _count_child(args.count_child[0].split(","), [int(n) for n in args.count_child[1].split(",")])
        return
    keys = args.series.split(",")
    unknown = sorted(set(keys) - set(SERIES))
    if unknown:
        parser.error(f"unknown series {unknown}; known: {', '.join(SERIES)}")
    if args.instructions:
        print(f"{'series':52} {'instructions / op':>18}", flush=True)
        low, high = (int(n) for n in args.counts.split(","))
        for key, count in instructions(keys, low, high).items():
            lib, mode = SERIES[key]
            print(f"{lib + ' (' + mode + ')':52} {count / 1e6:16.3f} M")
        return

    with _served(args.in_process) as url, _ops(url) as ops:
        ok = lambda result: None if result[0] == "5" else f"got {result[0]!r}"  # noqa: E731
        series = [
            Series(SERIES[key][0], "mcp", SERIES[key][1], op=ops[key], is_async=SERIES[key][1] == "async", check=ok)
            for key in keys
        ]
        if args.blocks:
            measure(series, rounds=args.rounds, ops=args.ops, seconds=args.seconds, warmup=20)
        else:
            measure_paired(series, rounds=args.rounds, ops=args.ops, seconds=args.seconds, warmup=20)
        floor = series[0].median()
        print(f"{'series':52} {'median µs':>10} {'p90 µs':>9} {'x floor':>8}")
        for s in series:
            label = f"{s.lib} ({s.mode})"
            if not s.ok:
                print(f"{label:52} {s.na}")
                continue
            print(f"{label:52} {s.median() / 1e3:10.0f} {s.p90() / 1e3:9.0f} {s.median() / floor:8.2f}")
    close_loop()


if __name__ == "__main__":
    main()
