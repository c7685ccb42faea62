"""A pause taken in one process is resumed in another, through Redis and through PostgreSQL,
exactly once; the conversation log then holds the whole turn once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

ROOT = Path(__file__).resolve().parents[2]


def worker(*args: str) -> str:
    return run_module("tests.memory.two_process_worker", *args)


def run_module(module: str, *args: str) -> str:
    """``python -m module args`` in a fresh process from the repository root; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def peek(backend: str, url: str, prefix: str, state_id: str) -> str:
    """The stored state as JSON, without taking it (what an approver UI would read)."""
    if backend == "redis":
        from chatclient.pending.redis import RedisPendingToolCallStore

        pending = RedisPendingToolCallStore(url, prefix=prefix).peek(state_id)
    else:
        from chatclient.pending.postgres import PostgresPendingToolCallStore

        store = PostgresPendingToolCallStore(url, prefix=prefix)
        pending = store.peek(state_id)
        store.close()
    return pending.model_dump_json()


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_pause_in_one_process_resume_in_another_exactly_once(backend: str, tmp_path: Path, prefix: str) -> None:
    url = server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)
    marker = tmp_path / "bookings.txt"
    common = (backend, url, prefix, str(marker))

    state_id = worker("pause", *common)
    assert state_id and not marker.exists(), "the gated tool has not run"
    copy = tmp_path / "copy.json"
    copy.write_text(peek(backend, url, prefix, state_id))

    assert worker("resume", *common, state_id) == "Booked for Ada."
    assert marker.read_text() == "booked Ada\n"
    assert worker("resume", *common, state_id) == "PendingStateNotFoundError"
    assert worker("replay", *common, str(copy)) == "PendingStateReusedError", "the nonce ledger is shared"
    assert marker.read_text() == "booked Ada\n", "the tool ran exactly once"

    if backend == "redis":
        from chatclient.memory.redis import RedisSessionRepository

        repository = RedisSessionRepository(url, prefix=prefix)
    else:
        from chatclient.memory.postgres import PostgresSessionRepository

        repository = PostgresSessionRepository(url, prefix=prefix)  # type: ignore[assignment]
    try:
        events = repository.events("conv-1")
    finally:
        repository.close()
    assert [e.message().role for e in events] == ["user", "assistant", "tool", "assistant"]
    assert len({e.turn_id for e in events}) == 1 and [e.seq for e in events] == [1, 2, 3, 4]
