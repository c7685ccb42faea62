"""Keeps the retrieval benchmark working at a small size (the 10,000/100,000 runs are not tests):
every row is printed and the store finds what raw SQL finds. No timing is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("sqlite_vec")


def test_retrieval_benchmark_prints_every_row() -> None:
    args = ["--sizes", "300", "--queries", "5", "--dims", "16"]
    postgres = os.environ.get("CHATCLIENT_TEST_PGVECTOR_URL")
    if postgres:
        args += ["--postgres", postgres]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.retrieval", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split(" | ")[:3] for line in done.stdout.splitlines() if line.startswith("| SQLite", 0)]
    assert rows == [
        ["| SQLite (sqlite-vec, exact)", "300", "store"],
        ["| SQLite (sqlite-vec, exact)", "300", "store, filtered"],
    ]
    if postgres:
        assert "recall@5 vs exact" in done.stdout
