"""A pause taken in one process is resumed in another from the async Redis store
(``resume_from(async_store, ...)`` with ``acall`` and ``astream``), exactly once; the conversation
log then holds the whole turn once."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatclient.testing.servers import REDIS_URL, server_url
from tests.memory.test_two_processes import run_module

ROOT = Path(__file__).resolve().parents[2]


def worker(*args: str) -> str:
    return run_module("tests.memory.async_two_process_worker", *args)


@pytest.mark.parametrize("role", ["resume", "resume-stream"])
def test_async_pause_in_one_process_resume_in_another_exactly_once(role: str, tmp_path: Path, prefix: str) -> None:
    url = server_url(REDIS_URL)
    marker = tmp_path / "bookings.txt"
    common = (url, prefix, str(marker))

    state_id = worker("pause", *common)
    assert state_id and not marker.exists(), "the gated tool has not run"
    assert worker(role, *common, state_id) == "Booked for Ada."
    assert marker.read_text() == "booked Ada\n"
    assert worker(role, *common, state_id) == "PendingStateNotFoundError"
    assert marker.read_text() == "booked Ada\n", "the tool ran exactly once"

    from chatclient.memory.redis import RedisSessionRepository

    repository = RedisSessionRepository(url, prefix=prefix)
    try:
        events = repository.events("conv-1")
    finally:
        repository.close()
    assert [e.message().role for e in events] == ["user", "assistant", "tool", "assistant"]
    assert len({e.turn_id for e in events}) == 1 and [e.seq for e in events] == [1, 2, 3, 4]
