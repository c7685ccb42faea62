"""Several worker processes share one store; turns move between them, paused turns are resumed by
another worker, workers are SIGKILLed mid-turn (inside a tool, inside the model round after it), a
model round fails, two workers race for one resume. Nothing is lost, stored twice, run twice, run
without an allow, or redeemed twice (``benchmarks.durable_soak.check``). Faults are planned, never timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.durable_soak import run
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_turns_survive_workers_that_die_fail_and_race(backend: str, tmp_path: Path) -> None:
    where = str(tmp_path) if backend == "sqlite" else server_url(POSTGRES_URL if backend == "postgres" else REDIS_URL)
    outcome = run(backend, where, workers=4, turns=24)
    assert outcome.kills == 6  # 24 turns: three workers die inside the tool, three inside the model round after it
    assert sum(outcome.done.values()) == 24


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_memory_backed_turns_without_a_store_survive_workers_that_die_fail_and_race(
    backend: str, tmp_path: Path
) -> None:
    where = str(tmp_path) if backend == "sqlite" else server_url(POSTGRES_URL if backend == "postgres" else REDIS_URL)
    outcome = run(backend, where, workers=4, turns=24, scenario="memory")
    assert outcome.kills == 6  # three workers die inside the charge, three in the model round after it
    assert sum(outcome.done.values()) == 24
