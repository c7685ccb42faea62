"""Keeps the hung-tools benchmark working: every path and scenario, one short round, in-process.

It checks the script, not the figures: no timing is asserted (the "no deadline" row only says
whether the quick request was still waiting when the script gave up on it).
"""

from __future__ import annotations

import importlib

import pytest


def test_hung_tools_reports_every_path_and_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    hung_tools = importlib.import_module("benchmarks.hung_tools")
    hung_tools.main(["--ops", "3", "--rounds", "1", "--deadline", "0.2", "--cap", "0.2"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith(("| acall", "| call"))]
    assert [row.split(" | ")[1] for row in rows] == [
        "0 hung",
        "64 hung, abandoned",
        "64 hung, not yet at their 0.2 s deadline",
        "64 hung, no deadline",
    ] * 2
    assert "x (rounds" in rows[1]
