"""Keeps the retrieval advisors' benchmark working: a few rounds of every row, no timing asserted."""

from __future__ import annotations

import importlib


def test_the_retrieval_advisor_benchmark_runs_every_row() -> None:
    bench = importlib.import_module("benchmarks.retrieval_advisor")
    rows = bench.measure(docs=20, rounds=3)
    names = [row[0] for row in rows]
    assert "QuestionAnswerAdvisor, found at once" in names
    assert "RetrievalAugmentationAdvisor, in memory, 20 docs (p99)" in names
    assert all(row[1] > 0 and row[3] > 0 for row in rows)
