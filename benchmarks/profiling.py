"""Profile one series with pyinstrument.

``python -m benchmarks.profiling S2 --lib chatclient --wire openai --mode async``

S8's series are named with their number of tools: ``S8a50``, ``S8a200`` (one call), ``S8b1``,
``S8b50`` (the 5-round loop).

Runs the series' operation repeatedly for ``--seconds`` on the same mock transport as the benchmark
(S4: on the loopback server) and prints pyinstrument's call tree. For S5 (a worker process), attach
py-spy to the worker instead (benchmarks/README.md, "Profiling").
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from . import libs
from .backends import LoopbackBackend
from .canned import WIRES
from .harness import run_async
from .scenarios import Config, Context

MODES = ("sync", "async")
METHODS = {
    ("S1", "sync"): "call",
    ("S1", "async"): "acall",
    ("S2", "sync"): "tool_loop",
    ("S2", "async"): "atool_loop",
    ("S3", "sync"): "s3_blocking",
    ("S3", "async"): "as3_async",
    ("S4", "sync"): "stream",
    ("S4", "async"): "astream",
    ("S7A", "async"): "aconfirm_round_trip",
    ("S7B", "async"): "atools50_loop",
    **{(f"S8A{n}", mode): f"{'a' if mode == 'async' else ''}call_tools{n}" for n in (50, 200) for mode in MODES},
    **{(f"S8B{n}", mode): f"{'a' if mode == 'async' else ''}loop5_tools{n}" for n in (1, 50) for mode in MODES},
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profiling", description=__doc__)
    parser.add_argument("scenario", help="S1, S2, S3, S4, S7a, S7b, S8a50, S8a200, S8b1 or S8b50")
    parser.add_argument("--lib", default="chatclient", choices=libs.LIBS)
    parser.add_argument("--wire", default="openai", choices=WIRES)
    parser.add_argument("--mode", default="sync", choices=("sync", "async"))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--interval", type=float, default=0.0002, help="sampling interval, seconds")
    args = parser.parse_args(argv)
    method = METHODS.get((args.scenario.upper(), args.mode))
    if method is None:
        parser.error(f"no {args.mode} operation for {args.scenario}; known: {sorted(METHODS)}")
    from pyinstrument import Profiler

    if args.scenario.upper() == "S4":
        from .server import running

        with running(max_requests=1_000_000, max_seconds=args.seconds * 3 + 30) as port:
            adapter = libs.make(args.lib, args.wire, LoopbackBackend(args.wire, port))
            _profile(Profiler, adapter, method, args.seconds, args.interval)
    else:
        adapter, _, na = Context(Config()).mock(args.lib, args.wire)
        if na:
            raise SystemExit(na)
        _profile(Profiler, adapter, method, args.seconds, args.interval)


def _profile(profiler_type: type, adapter: object, method: str, seconds: float, interval: float) -> None:
    op = getattr(adapter, method)
    streaming = method in ("stream", "astream")

    async def arun(deadline: float) -> int:
        n = 0
        while time.monotonic() < deadline:
            if streaming:
                async for _ in op():
                    pass
            else:
                await op()
            n += 1
        return n

    def run(deadline: float) -> int:
        if method.startswith("a"):
            return int(run_async(arun(deadline)))
        n = 0
        while time.monotonic() < deadline:
            if streaming:
                for _ in op():
                    pass
            else:
                op()
            n += 1
        return n

    run(time.monotonic() + min(1.0, seconds / 3))  # warm-up
    profiler = profiler_type(interval=interval, async_mode="disabled")
    profiler.start()
    n = run(time.monotonic() + seconds)
    profiler.stop()
    print(f"{n} operations of {method} in {seconds:g} s")
    print(profiler.output_text(unicode=True, color=False))


if __name__ == "__main__":
    main()
