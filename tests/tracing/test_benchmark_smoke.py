"""Keeps S1T (tracing absent against tracing on with nothing recording, one run) working: a few
iterations in-process on the mock transport. It checks the table and budget rows, never a time."""

from __future__ import annotations

import importlib


def test_s1t_measures_tracing_absent_and_on_in_one_run() -> None:
    scenarios = importlib.import_module("benchmarks.scenarios")
    harness = importlib.import_module("benchmarks.harness")
    ctx = scenarios.Context(scenarios.Config.smoke(), libs=("raw", "chatclient"), wires=("openai",))
    try:
        tables, budgets = scenarios.run_scenario("S1T", ctx)
    finally:
        harness.close_loop()
    (table,) = tables
    assert table.markdown().startswith("### S1T:")
    libraries = {(row[1], row[2]) for row in table.rows}
    for mode in ("sync", "async"):
        assert {(mode, "raw httpx2"), (mode, "chatclient"), (mode, "chatclient, tracing on (nothing records)")} <= (
            libraries
        )
    assert not any("n/a" in cell for row in table.rows for cell in row)
    assert [b.what for b in budgets] == [
        "tracing on, nothing records, openai sync",
        "tracing on, nothing records, openai async",
    ]
