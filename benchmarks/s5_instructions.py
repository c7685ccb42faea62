"""S5's deterministic companion: instructions per call at 300 in flight, raw httpx2 and chatclient.

Each library runs S5's batch (300 concurrent ``acall()`` on the loopback server, the same pool
limits for both) in a fresh process under valgrind's callgrind, instrumentation switched on only
around the measured batches, after a warm-up batch that opens the pool's connections. The figure is
the difference of ``--batches`` + 1 and 1 measured batches, over the calls, so start-up, the warm-up
and the switch cancel out: what one steady-state batch costs per call, whatever else the machine
runs. Needs ``valgrind`` (``callgrind_control``). The server runs outside valgrind.

    .venv/bin/python -m benchmarks.s5_instructions [--wires openai,anthropic] [--libs raw,chatclient]
        [--limits 100,20] [--batches 1] [--mock] [--profile] [--concurrency 1,30,100,300]

``--mock`` counts the same calls made one at a time on httpx2's in-process mock transport (no
sockets, no pool): what each library adds above httpx2 itself, in a tenth of the time.
``--limits MAX,KEEPALIVE`` gives both libraries' async clients those pool limits (default httpx2's,
100 and 20). ``--profile`` prints, instead, where each library's CPU time goes by package (cProfile,
in-process, timed: a breakdown, not a figure to compare), and how many connections each batch opens.
``--concurrency`` counts at each number in flight instead of 300 (a batch of N concurrent calls, as many
batches as make 300 calls): whether what a library adds per call grows with the calls in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx2

from .backends import LoopbackBackend

ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 300
WARMUP = 1
DEFAULT_LIMITS = (100, 20)  # httpx2's own: what a plain ``httpx2.AsyncClient()`` and chatclient's default client use


class LimitedBackend(LoopbackBackend):
    """The loopback server, with async clients of the given pool limits (both libraries alike)."""

    def __init__(self, wire: str, port: int, limits: tuple[int, int] = DEFAULT_LIMITS) -> None:
        super().__init__(wire, port)
        self.limits = limits

    def async_client(self) -> httpx2.AsyncClient:
        most, kept = self.limits
        return httpx2.AsyncClient(
            timeout=60.0, limits=httpx2.Limits(max_connections=most, max_keepalive_connections=kept)
        )


def _batch_runner(lib: str, wire: str, port: int, limits: tuple[int, int], concurrency: int = CONCURRENCY) -> Any:
    from . import libs
    from .canned import TEXT

    loop = asyncio.new_event_loop()
    adapter = libs.make(lib, wire, LimitedBackend(wire, port, limits))

    async def batch() -> None:
        results = await asyncio.gather(*(adapter.acall() for _ in range(concurrency)))
        assert all(r == TEXT for r in results), "wrong answer"

    return lambda n: [loop.run_until_complete(batch()) for _ in range(n)]


def _mock_runner(lib: str, wire: str) -> Any:
    """``n`` calls one after the other on httpx2's in-process mock transport: no sockets, no pool."""
    from . import libs
    from .backends import MockBackend
    from .canned import TEXT

    loop = asyncio.new_event_loop()
    adapter = libs.make(lib, wire, MockBackend(wire))

    async def calls(n: int) -> None:
        for _ in range(n):
            assert await adapter.acall() == TEXT, "wrong answer"

    return lambda n: loop.run_until_complete(calls(n * CONCURRENCY))


def _child(lib: str, wire: str, port: int, batches: int, limits: tuple[int, int], concurrency: int) -> None:
    """Under callgrind: warm up, then count ``batches`` batches (port 0: on the mock transport)."""
    run = _batch_runner(lib, wire, port, limits, concurrency) if port else _mock_runner(lib, wire)
    run(WARMUP)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], stdout=subprocess.DEVNULL, check=True)
    run(batches)
    subprocess.run(["callgrind_control", "-i", "off", pid], stdout=subprocess.DEVNULL, check=True)


def _instructions(
    lib: str, wire: str, port: int, batches: int, limits: tuple[int, int], concurrency: int = CONCURRENCY
) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                   sys.executable, "-m", "benchmarks.s5_instructions", "--child", lib, wire, str(port),
                   str(batches), f"--limits={limits[0]},{limits[1]}", f"--concurrency={concurrency}"]  # fmt: skip
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for path in glob.glob(out + "*"):  # one file per thread part
            with open(path) as file:
                total += sum(int(line.split()[1]) for line in file if line.startswith("totals:"))
        return total


def per_call(
    lib: str, wire: str, batches: int, limits: tuple[int, int], *, mock: bool = False, concurrency: int = CONCURRENCY
) -> float:
    """Instructions per call of one steady-state batch (the difference of two runs); below 300 in
    flight, of as many batches as make 300 calls."""
    from .server import running

    if mock:
        base = _instructions(lib, wire, 0, 1, limits)
        return (_instructions(lib, wire, 0, 1 + batches, limits) - base) / (batches * CONCURRENCY)
    batches *= -(-CONCURRENCY // concurrency)  # at least 300 measured calls
    bound = concurrency * (2 * WARMUP + batches + 2) + 100
    with running(max_requests=bound, max_seconds=1800, idle_seconds=600) as port:
        base = _instructions(lib, wire, port, 1, limits, concurrency)
        more = _instructions(lib, wire, port, 1 + batches, limits, concurrency)
    return (more - base) / (batches * concurrency)


# ------------------------------------------------------------------ --profile: where the time goes

_PACKAGES = ("httpcore2/_async/connection_pool", "httpcore2", "h11", "anyio", "sniffio", "httpx2", "asyncio",
             "chatclient", "providers", "pydantic", "benchmarks", "json")  # fmt: skip


def _package(filename: str) -> str:
    for package in _PACKAGES:
        if f"/{package}" in filename:
            return package
    return "builtins and the rest" if filename == "~" else "other: " + Path(filename).name


def profile(lib: str, wire: str, limits: tuple[int, int], batches: int = 4) -> None:
    """Print one library's CPU time by package for ``batches`` batches, and the connections opened."""
    import cProfile
    import pstats
    import time

    import httpcore2

    from .server import running

    opened = [0]
    create = httpcore2.AsyncConnectionPool.create_connection

    def counting(pool: Any, origin: Any) -> Any:
        opened[0] += 1
        return create(pool, origin)

    httpcore2.AsyncConnectionPool.create_connection = counting  # type: ignore[method-assign]
    with running(max_requests=CONCURRENCY * (batches + WARMUP + 2) + 100, max_seconds=600) as port:
        run = _batch_runner(lib, wire, port, limits)
        run(WARMUP)
        opened[0] = 0
        profiler = cProfile.Profile()
        cpu = time.process_time()
        profiler.enable()
        run(batches)
        profiler.disable()
        cpu = time.process_time() - cpu
    stats: Any = pstats.Stats(profiler).stats
    by_package: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, own, _, _) in stats.items():
        by_package[_package(filename)] += own
    total = sum(by_package.values())
    calls = batches * CONCURRENCY
    print(f"\n{lib} ({wire}, limits {limits[0]}/{limits[1]}): {cpu / calls * 1e6:,.0f} µs CPU per call under the "
          f"profiler; {opened[0] / batches:.0f} connections opened per batch of {CONCURRENCY}")  # fmt: skip
    for package, own in sorted(by_package.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {package:38} {own / total:6.1%}")
    top = sorted(stats.items(), key=lambda kv: -kv[1][2])[:8]
    for (filename, line, name), (_, calls_made, own, _, _) in top:
        short = "/".join(Path(filename).parts[-2:])
        print(f"    {own / total:6.1%}  {calls_made / calls:6.1f} calls/call  {short}:{line}({name})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wires", default="openai,anthropic")
    parser.add_argument("--libs", default="raw,chatclient")
    parser.add_argument("--limits", default=",".join(map(str, DEFAULT_LIMITS)), help="MAX,KEEPALIVE")
    parser.add_argument("--batches", type=int, default=1, help="measured batches (each count's difference)")
    parser.add_argument("--profile", action="store_true", help="CPU time by package instead (timed)")
    parser.add_argument("--mock", action="store_true", help="calls one at a time on the mock transport instead")
    parser.add_argument("--concurrency", default=str(CONCURRENCY), help="calls in flight: N or N,N,...")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)  # LIB WIRE PORT BATCHES
    args = parser.parse_args()
    most, kept = (int(x) for x in args.limits.split(","))
    limits = (most, kept)
    if args.child:
        lib, wire, port, batches = args.child
        _child(lib, wire, int(port), int(batches), limits, int(args.concurrency))
        return
    levels = [int(n) for n in args.concurrency.split(",")]
    pairs = [(wire, lib) for wire in args.wires.split(",") for lib in args.libs.split(",")]
    if args.profile:
        for wire, lib in pairs:
            profile(lib, wire, limits)
        return
    if args.mock:
        print(f"mock transport, calls one at a time, {args.batches} x {CONCURRENCY} measured calls")
    else:
        print(f"pool limits {most}/{kept}, {args.concurrency} in flight, {args.batches} x 300 measured calls")
    print(f"{'wire':10} {'library':12} {'in flight':>9} {'instructions / call':>20} {'x raw':>7} {'+ raw':>9}")
    raw: dict[tuple[str, int], float] = {}
    for level in [0] if args.mock else levels:
        for wire, lib in pairs:
            count = per_call(lib, wire, args.batches, limits, mock=args.mock, concurrency=level or CONCURRENCY)
            raw.setdefault((wire, level), count) if lib == "raw" else None
            base = raw.get((wire, level))
            ratio, extra = (f"{count / base:.3f}", f"{(count - base) / 1e3:+,.1f} k") if base else ("", "")
            shown = "1 (mock)" if args.mock else str(level)
            print(f"{wire:10} {lib:12} {shown:>9} {count / 1e3:18,.1f} k {ratio:>7} {extra:>9}", flush=True)


if __name__ == "__main__":
    main()
