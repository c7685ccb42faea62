"""Hung tools (issue 29, item 3): a quick request's latency with 0 and with 64 hung sync tools.

Each hung tool blocks on an event until the end of its scenario (a dependency that never answers).
The quick request is a whole tool round through the chat loop: a scripted model asks for a trivial
sync tool, the tool runs on the shared pool, the model answers with its result. Scenarios:

- ``0 hung``: the quick request alone (the reference);
- ``64 hung, abandoned``: 64 requests with ``timeout`` whose tools hang; they have ended at their
  deadline (the model was told), their 64 threads are still blocked, the pool replaced them;
- ``64 hung, not yet at their deadline``: the quick request is sent while the 64 still hold the
  pool's 64 threads; it waits for the first of them to reach its deadline (the capacity rule);
- ``64 hung, no deadline``: the 64 set no timeout, so nothing is abandoned: the quick request
  cannot get a thread until a hung tool returns (capped here at ``--cap`` seconds).

The 64 hung requests are async ones (each sync tool on the shared pool). The quick request takes both
paths: ``acall`` (a lone sync tool runs on the pool) and ``call`` (two tool calls: the caller's thread
runs one, the pool the other).

    python -m benchmarks.hung_tools [--ops 200 --rounds 7 --deadline 0.5 --cap 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

HUNG = 64


def _client() -> Any:
    from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, UserMessage
    from chatclient.testing import ScriptedChatModel, tool_call

    def script(prompt: Any) -> Any:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return " | ".join(r.response_data for r in last.responses)
        wanted = last.text if isinstance(last, UserMessage) else ""
        calls = 2 if wanted == "quick2" else 1
        name = "hang" if wanted == "hang" else "quick"
        return AssistantMessage(None, tool_calls=[tool_call(name, {}) for _ in range(calls)])

    return ChatClient.create(ScriptedChatModel(script))


class _Hung:
    """64 async requests (on a loop of their own) whose sync tool blocks until :meth:`release`:
    each holds one of the shared pool's threads, as the issue's 64 requests did."""

    def __init__(self, client: Any, quick: Any, timeout: float | None) -> None:
        from chatclient import tool

        self.release_event = threading.Event()
        entered = threading.Semaphore(0)
        release = self.release_event

        @tool(name="hang")
        def hang() -> str:
            """Waits for a dependency that never answers."""
            entered.release()
            release.wait()
            return "late"

        async def ask() -> Any:
            spec = client.prompt("hang").tools(hang, quick)
            return await (spec.timeout(timeout) if timeout is not None else spec).acall().content()

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bench-hung-loop", daemon=True)
        self.thread.start()
        self.requests = [asyncio.run_coroutine_threadsafe(ask(), self.loop) for _ in range(HUNG)]
        for _ in range(HUNG):
            entered.acquire()

    def wait_abandoned(self) -> None:
        for request in self.requests:
            assert "did not finish" in request.result()

    def release(self) -> None:
        from chatclient.tools import _execution

        self.release_event.set()
        for request in self.requests:
            request.result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        pool = _execution._pool
        while pool is not None and pool.abandoned:  # the late results come back: the pool is whole again
            time.sleep(0.01)


def _latencies(op: Callable[[], Any], ops: int) -> list[float]:
    times = []
    for _ in range(ops):
        started = time.perf_counter()
        op()
        times.append(time.perf_counter() - started)
    return times


def _ops(client: Any, quick: Any, loop: asyncio.AbstractEventLoop) -> dict[str, Callable[[], Any]]:
    def acall() -> Any:
        text = loop.run_until_complete(client.prompt("quick").tools(quick).acall().content())
        assert text == "quick result", text
        return text

    def call() -> Any:
        text = client.prompt("quick2").tools(quick).call().content()
        assert text == "quick result | quick result", text
        return text

    return {"acall": acall, "call": call}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=200, help="quick requests per round, path and scenario")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of 0 hung, then 64 hung")
    parser.add_argument("--deadline", type=float, default=0.5, help="the hung requests' timeout, seconds")
    parser.add_argument("--cap", type=float, default=2.0, help="how long to wait without any deadline")
    args = parser.parse_args(argv)
    logger = logging.getLogger("chatclient.tools")
    level = logger.level
    logger.setLevel(logging.ERROR)  # 64 timeouts and 64 discards a scenario
    try:
        rows = run(args)
    finally:
        logger.setLevel(level)
    print(f"quick request latency: median of {args.rounds} rounds' medians of {args.ops} ops ({HUNG} hung sync tools)")
    print("ratio: the median of the rounds' 64-hung / 0-hung")
    print("| path | scenario | quick request |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def run(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """The table's rows: each path through each scenario."""
    from chatclient import tool

    @tool
    def quick() -> str:
        """Answers at once."""
        return "quick result"

    client = _client()
    loop = asyncio.new_event_loop()
    ops = _ops(client, quick, loop)
    for op in ops.values():
        _latencies(op, args.ops)  # warm-up: imports, the pool's first threads

    rows: list[tuple[str, str, str]] = []
    medians: dict[tuple[str, str], float] = {}
    for path, op in ops.items():
        zero: list[float] = []
        hung_64: list[float] = []
        ratios: list[float] = []
        for _ in range(args.rounds):  # rounds in turn: a shared machine's load moves between them
            zero.append(statistics.median(_latencies(op, args.ops)))
            hung = _Hung(client, quick, args.deadline)
            hung.wait_abandoned()
            hung_64.append(statistics.median(_latencies(op, args.ops)))
            hung.release()
            ratios.append(hung_64[-1] / zero[-1])
        medians[(path, "0")], medians[(path, "64")] = statistics.median(zero), statistics.median(hung_64)
        hung = _Hung(client, quick, args.deadline)  # the quick request comes while all 64 still count
        before = _latencies(op, 1)[0]
        hung.wait_abandoned()
        hung.release()
        hung = _Hung(client, quick, None)
        capped, waiting = _capped(op, args.cap)
        hung.release()
        waiting.join()
        base, abandoned = medians[(path, "0")], medians[(path, "64")]
        rows.append((path, "0 hung", f"{base * 1e6:.0f} µs"))
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        ratio = f"{statistics.median(ratios):.2f}x (rounds {spread})"
        rows.append((path, "64 hung, abandoned", f"{abandoned * 1e6:.0f} µs, {ratio}"))
        rows.append(
            (path, f"64 hung, not yet at their {args.deadline:g} s deadline", f"{before * 1e3:.0f} ms (one op)")
        )
        rows.append((path, "64 hung, no deadline", capped))
    loop.close()
    return rows


def _capped(op: Callable[[], Any], cap: float) -> tuple[str, threading.Thread]:
    """The op's latency, or that it was still waiting at ``cap`` (it finishes once a hung tool
    returns); and its thread, to join."""
    done = threading.Event()
    started = time.perf_counter()

    def run() -> None:
        op()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if done.wait(cap):
        return f"{(time.perf_counter() - started) * 1e3:.0f} ms", thread
    return f"still waiting after {cap:g} s (runs once a hung tool returns)", thread


if __name__ == "__main__":
    main()
