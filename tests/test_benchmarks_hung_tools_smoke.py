"""Keeps the hung-tools benchmark working: every path and scenario, one short round.

It checks the script, not the figures: no timing is asserted (the "no deadline" row only says
whether the quick request was still waiting when the script gave up on it). It runs in a process of
its own: it fills the shared tool pool with 64 hung calls, which must not meet the threads other tests
of this session left in that pool (nor leave its own to them).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_hung_tools_reports_every_path_and_scenario() -> None:
    args = ["--ops", "3", "--rounds", "1", "--deadline", "0.2", "--cap", "0.2"]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.hung_tools", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| acall", "| call"))]
    assert [row.split(" | ")[1] for row in rows] == [
        "0 hung",
        "64 hung, abandoned",
        "64 hung, not yet at their 0.2 s deadline",
        "64 hung, no deadline",
    ] * 2
    assert "x (rounds" in rows[1]
