"""Entry point: ``python -m benchmarks.run [--quick] [--only S1,S2] [--libs raw,chatclient] [--wires openai]``.

Prints one Markdown table per scenario and the budget verdicts, and writes them to
``benchmarks/results/<date>-<quick|full>.md``. ``make bench`` / ``make bench-quick`` set up
``benchmarks/.venv`` with everything compared and run this.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import libs
from .canned import WIRES
from .harness import TIMES, Budget, Table, budget_table, close_loop
from .scenarios import SCENARIOS, Config, Context, run_scenario

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages * size / 2**30:.0f} GiB"
    except (ValueError, OSError):
        pass
    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "OS": platform.platform(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def versions(selected: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    names = ["httpx2", *(d for lib in selected for d in libs.DISTRIBUTIONS[lib]), "tiktoken"]
    for name in dict.fromkeys(names):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def header(config: Config, selected: Sequence[str], started: dt.datetime) -> str:
    lines = [f"# Benchmarks, {started:%Y-%m-%d %H:%M} UTC ({config.name} run)", ""]
    lines += [f"- **{k}**: {v}" for k, v in machine().items()]
    lines.append("- **versions**: " + ", ".join(f"{k} {v}" for k, v in versions(selected).items()))
    lines.append(
        f"- **method**: libraries interleaved round-robin, {config.rounds} rounds of ≤ {config.ops} ops or "
        f"≤ {config.seconds:g} s per library (S3: {config.s3_rounds}, S4: {config.s4_rounds}, "
        f"S5: {config.s5_processes} {TIMES} {config.s5_rounds} rounds in fresh processes, S6: {config.s6_runs} "
        "processes) after a warm-up; medians and p90 of "
        f"per-op times; {TIMES} raw httpx2 is the ratio of medians (lower is better, except S5)."
    )
    return "\n".join(lines) + "\n"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds: under 3 minutes on 2 cores")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="scenarios, e.g. S1,S4")
    parser.add_argument("--libs", default=",".join(libs.LIBS), help=f"libraries among {','.join(libs.LIBS)}")
    parser.add_argument("--wires", default=",".join(WIRES), help="openai,anthropic,gemini,bedrock")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for the Markdown report")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    args.only = [s.strip().upper() for s in args.only.split(",") if s.strip()]
    args.libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    args.wires = [s.strip() for s in args.wires.split(",") if s.strip()]
    for value, known, what in ((args.only, SCENARIOS, "scenario"), (args.libs, libs.LIBS, "library"),
                               (args.wires, WIRES, "wire")):  # fmt: skip
        unknown = [v for v in value if v not in known]
        if unknown:
            parser.error(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    args.libs = [lib for lib in libs.LIBS if lib in args.libs]  # table order
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    config = Config.quick() if args.quick else Config()
    started = dt.datetime.now(dt.timezone.utc)
    ctx = Context(config, libs=args.libs, wires=args.wires)
    top = header(config, args.libs, started)
    print(top, flush=True)
    tables: list[Table] = []
    budgets: list[Budget] = []
    t0 = time.monotonic()
    for name in args.only:
        t = time.monotonic()
        new_tables, new_budgets = run_scenario(name, ctx)
        tables += new_tables
        budgets += new_budgets
        for table in new_tables:
            print(table.markdown(), flush=True)
        print(f"({name} took {time.monotonic() - t:.1f} s)\n", file=sys.stderr, flush=True)
    close_loop()
    summary = budget_table(budgets)
    print(summary.markdown())
    elapsed = time.monotonic() - t0
    print(f"(all scenarios took {elapsed:.0f} s)", file=sys.stderr)
    if not args.no_write:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{started:%Y-%m-%d}-{config.name}.md"
        body = [top, f"Scenarios: {', '.join(args.only)}; wall time {elapsed:.0f} s.\n", summary.markdown()]
        body += [table.markdown() for table in tables]
        path.write_text("\n".join(body))
        print(f"written to {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
