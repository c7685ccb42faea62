"""Keeps the benchmark harness working: S1 for raw httpx2 and chatclient, a few iterations, in-process.

The benchmarks are not tests and CI does not run them; this runs one scenario on the in-process mock
transport with the project's own venv (none of the peers are installed there), without network.
``benchmarks`` is imported with ``importlib``: it lies outside the project's type-checked packages.
"""

from __future__ import annotations

import importlib
import re
import time

import pytest

pytest.importorskip("providers.openai", reason="the chatclient OpenAI provider is not written yet")


@pytest.mark.parametrize("wire", ["openai", "gemini", "bedrock"])
def test_s1_produces_a_table_with_ratios_to_raw_httpx2(wire: str) -> None:
    scenarios = importlib.import_module("benchmarks.scenarios")
    harness = importlib.import_module("benchmarks.harness")
    started = time.monotonic()
    ctx = scenarios.Context(scenarios.Config.smoke(), libs=("raw", "chatclient"), wires=(wire,))
    try:
        tables, budgets = scenarios.s1(ctx)
    finally:
        harness.close_loop()

    assert time.monotonic() - started < 5
    (table,) = tables
    markdown = table.markdown()
    assert markdown.startswith("### S1:")
    assert "\u00d7 raw httpx2" in table.columns
    rows = {(row[1], row[2]): row for row in table.rows}
    assert set(rows) == {
        ("sync", "raw httpx2"),
        ("sync", "chatclient"),
        ("async", "raw httpx2"),
        ("async", "chatclient"),
    }
    for (mode, library), row in rows.items():
        assert not row[3].startswith("n/a"), f"{library} {mode}: {row[3]}"
        assert float(row[3].replace(",", "")) > 0, "a median in µs"
        ratio = re.fullmatch(r"(\d+(?:\.\d+)?)\u00d7", row[5])
        assert ratio is not None, f"{library} {mode}: ratio cell {row[5]!r}"
        if library == "raw httpx2":
            assert row[5] == "1.00\u00d7"
    assert {b.what for b in budgets} >= {f"one call, {wire} sync", f"one call, {wire} async"}
    assert all(b.holds is not None for b in budgets if b.what.startswith("one call"))
