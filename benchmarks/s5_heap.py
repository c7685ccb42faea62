"""S5's memory side, counted rather than timed: what each call holds while 300 are in flight.

``python -m benchmarks.s5_heap [--wires openai,anthropic] [--batches 8]`` runs raw httpx2 and chatclient,
each in a fresh process on the loopback server, and prints per library and wire: the tracked objects
alive per in-flight call at the peak of a batch (collector off), the collections of each generation
per 1,000 calls, the heap the full collections scan, and the CPU time per call. The counts hardly move
between runs, so they show a change that S5's calls/s on a shared machine cannot resolve.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 300


def measure(lib: str, wire: str, batches: int) -> dict[str, float]:
    from . import libs
    from .backends import LoopbackBackend
    from .canned import TEXT
    from .server import running

    with running(max_requests=CONCURRENCY * (batches + 4) + 100, max_seconds=300) as port:
        loop = asyncio.new_event_loop()
        adapter = libs.make(lib, wire, LoopbackBackend(wire, port))

        async def batch() -> None:
            results = await asyncio.gather(*(adapter.acall() for _ in range(CONCURRENCY)))
            assert all(r == TEXT for r in results), "wrong answer"

        for _ in range(2):  # warm-up: the pool's connections, first-use imports and schemas
            loop.run_until_complete(batch())
        gc.collect()
        heap = len(gc.get_objects())
        peak = _peak_in_flight(loop, batch) - heap
        collections = [0, 0, 0]
        gc.callbacks.append(lambda phase, info: phase == "stop" and collections.__setitem__(
            info["generation"], collections[info["generation"]] + 1))  # fmt: skip
        cpu = time.process_time()
        for _ in range(batches):
            loop.run_until_complete(batch())
        cpu = time.process_time() - cpu
        calls = CONCURRENCY * batches
        return {"in_flight": peak / CONCURRENCY, "heap": heap, "cpu_us": cpu / calls * 1e6,
                **{f"gen{g}": n * 1000 / calls for g, n in enumerate(collections)}}  # fmt: skip


def _peak_in_flight(loop: asyncio.AbstractEventLoop, batch: object) -> int:
    """Most tracked objects seen during one batch, sampled every 0.5 ms with the collector off."""
    peak = 0
    done = False

    def probe() -> None:
        nonlocal peak
        peak = max(peak, len(gc.get_objects()))
        if not done:
            loop.call_later(0.0005, probe)

    async def run() -> None:
        nonlocal done
        loop.call_soon(probe)
        await batch()  # type: ignore[operator]
        done = True

    gc.disable()
    try:
        loop.run_until_complete(run())
    finally:
        gc.enable()
    return peak


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wires", default="openai,anthropic")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # LIB,WIRE: measure in this process
    args = parser.parse_args(argv)
    if args.one:
        lib, wire = args.one.split(",")
        print(json.dumps(measure(lib, wire, args.batches)))
        return
    print("| wire | library | objects per call in flight | gen 0 / 1 / 2 collections per 1,000 calls "
          "| tracked heap | CPU µs per call |")  # fmt: skip
    print("|---|---|--:|--:|--:|--:|")
    for wire in args.wires.split(","):
        for lib in ("raw", "chatclient"):
            proc = subprocess.run([sys.executable, "-m", "benchmarks.s5_heap", "--one", f"{lib},{wire}",
                                   "--batches", str(args.batches)], cwd=ROOT, capture_output=True, text=True,
                                  timeout=600, check=True)  # fmt: skip
            r = json.loads(proc.stdout)
            print(f"| {wire} | {lib} | {r['in_flight']:.1f} | {r['gen0']:.0f} / {r['gen1']:.1f} / {r['gen2']:.2f} "
                  f"| {r['heap']:,.0f} | {r['cpu_us']:,.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
