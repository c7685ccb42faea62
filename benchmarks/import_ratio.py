"""The import budget, measured on its own: chatclient's import against the floor of its dependencies.

``python -m benchmarks.import_ratio [--runs 40] [--stmt "import chatclient, providers.openai"]`` times
each statement in fresh processes, the two alternating (so machine noise falls on both alike), and
prints the median wall and CPU time of each and their ratios. Times are taken inside each process
around the import (interpreter start-up excluded), as S6 does. Faster than a full S6 run, for trying
one change to the import at a time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .harness import TIMES, median
from .scenarios import _IMPORT_PROBE, DEPENDENCY_FLOOR

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_STMT = "import chatclient, providers.openai"


def sample(stmt: str) -> tuple[int, int]:
    """(wall ns, CPU ns) of ``stmt`` in a fresh interpreter."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    proc = subprocess.run([sys.executable, "-c", _IMPORT_PROBE.format(stmt=stmt)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60, check=True)  # fmt: skip
    wall, cpu = proc.stdout.split()
    return int(wall), int(cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--stmt", default=DEFAULT_STMT)
    args = parser.parse_args(argv)
    statements = [args.stmt, DEPENDENCY_FLOOR]
    walls: dict[str, list[int]] = {s: [] for s in statements}
    cpus: dict[str, list[int]] = {s: [] for s in statements}
    sample(args.stmt)  # compiles any stale bytecode before the first measured run
    for run in range(args.runs):
        for stmt in statements if run % 2 == 0 else statements[::-1]:
            wall, cpu = sample(stmt)
            walls[stmt].append(wall)
            cpus[stmt].append(cpu)
    print(f"{args.runs} fresh processes each, alternating; medians")
    print("| import | wall ms | CPU ms |")
    print("|---|--:|--:|")
    for stmt in statements:
        print(f"| `{stmt}` | {median(walls[stmt]) / 1e6:.1f} | {median(cpus[stmt]) / 1e6:.1f} |")
    wall_ratio = median(walls[args.stmt]) / median(walls[DEPENDENCY_FLOOR])
    cpu_ratio = median(cpus[args.stmt]) / median(cpus[DEPENDENCY_FLOOR])
    # Per pair of neighbouring runs, the ratio: noise that hits one pair hits both of its runs.
    pairs = [a / b for a, b in zip(cpus[args.stmt], cpus[DEPENDENCY_FLOOR], strict=True)]
    print(f"\nwall {TIMES} floor {wall_ratio:.2f}, CPU {TIMES} floor {cpu_ratio:.2f}, "
          f"median of paired CPU ratios {median(pairs):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
