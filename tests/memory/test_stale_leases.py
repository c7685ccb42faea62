"""A lease its holder never released (the process died mid-turn) is swept by ``delete_expired``,
on both SQL stores, with or without a session ttl, while a live lease stays: otherwise such rows
pile up for ever."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chatclient.memory.postgres import PostgresSessionRepository
from chatclient.memory.sqlite import SqliteSessionRepository


def _lease_rows(repository: Any, prefix: str, path: Path | None) -> set[str]:
    sql = f"SELECT session_id FROM {prefix}session_lease"
    if path is not None:
        with sqlite3.connect(path) as db:
            return {row[0] for row in db.execute(sql)}
    with repository._pool.connection() as connection:
        return {row[0] for row in connection.execute(sql)}


@pytest.mark.parametrize("ttl", [3600.0, None], ids=["session-ttl", "no-ttl"])
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_delete_expired_sweeps_the_leases_nobody_released(
    backend: str, ttl: float | None, tmp_path: Path, prefix: str, postgres_url: str
) -> None:
    path = tmp_path / "memory.db" if backend == "sqlite" else None
    if path is not None:
        repository: Any = SqliteSessionRepository(path, prefix=prefix, ttl=ttl)
    else:
        repository = PostgresSessionRepository(postgres_url, prefix=prefix, ttl=ttl)
    try:
        assert repository.try_lease("crashed", "dead-holder", 0.0), "taken, and expired at once"
        assert repository.try_lease("working", "live-holder", 600.0)
        assert _lease_rows(repository, prefix, path) == {"crashed", "working"}
        assert repository.delete_expired() == 0, "no session expired; only the lease is stale"
        assert _lease_rows(repository, prefix, path) == {"working"}
        assert not repository.try_lease("working", "someone-else", 600.0), "the live lease still holds"
        assert repository.release_lease("working", "live-holder")
    finally:
        repository.close()
