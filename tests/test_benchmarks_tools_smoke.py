"""Keeps S8 (the cost per tool) working: both tables and every budget row on every wire, a few
iterations, in-process.

Like ``test_benchmarks_smoke.py`` it checks the harness, not the figures: no timing is asserted.
``benchmarks`` is imported with ``importlib``: it lies outside the project's type-checked packages.
"""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("providers.anthropic", reason="the chatclient providers are not installed")


def test_s8_measures_every_tool_count_and_loop_on_every_wire() -> None:
    scenarios = importlib.import_module("benchmarks.scenarios")
    harness = importlib.import_module("benchmarks.harness")
    wires = importlib.import_module("benchmarks.canned").WIRES
    assert "bedrock" in wires
    ctx = scenarios.Context(scenarios.Config.smoke(), libs=("raw", "chatclient"))
    try:
        (calls, loops), budgets = scenarios.s8(ctx)
    finally:
        harness.close_loop()

    assert calls.markdown().startswith("### S8a:") and loops.markdown().startswith("### S8b:")
    assert {(row[0], row[1], row[2]) for row in calls.rows} == {
        (wire, mode, n) for wire in wires for mode in ("sync", "async") for n in ("0", "50", "200")
    }
    assert len(loops.rows) == len(wires) * 2 * 2
    for row in [*calls.rows, *loops.rows]:
        assert not any(cell.startswith("n/a") for cell in row), row
    for row in loops.rows:
        raw_bytes, our_bytes = (float(x.replace(",", "")) for x in row[-1].split(" / "))
        assert our_bytes <= raw_bytes * 1.01, f"chatclient sends no more than the floor: {row}"
    assert len(budgets) == len(wires) * 2 * 2 + len(wires) * 2
    assert all(b.holds is not None for b in budgets), [b.row() for b in budgets if b.holds is None]
