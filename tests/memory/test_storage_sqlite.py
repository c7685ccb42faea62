"""The one SQLite connection manager: every store that opens a file through it gets WAL, the busy
timeout and the durability it asks for, and ``close`` closes the connections of every thread."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from chatclient._storage.sqlite import SqliteDatabase
from chatclient.memory.sqlite import SqliteSessionRepository
from chatclient.pending.sqlite import SqliteNonceLedger
from chatclient.pending.state import SqlitePendingToolCallStore

FULL, NORMAL = 2, 1


def pragmas(db: SqliteDatabase) -> tuple[str, int, int]:
    connection = db.connection()
    return (
        connection.execute("PRAGMA journal_mode").fetchone()[0],
        connection.execute("PRAGMA busy_timeout").fetchone()[0],
        connection.execute("PRAGMA synchronous").fetchone()[0],
    )


def test_the_pending_store_and_the_nonce_ledger_commit_durably(tmp_path: Path) -> None:
    # A redeemed nonce lost to a power cut would let the same sealed state run again after it.
    store = SqlitePendingToolCallStore(tmp_path / "pending.db")
    ledger = SqliteNonceLedger(tmp_path / "pending.db")
    try:
        assert pragmas(store._db) == ("wal", 30_000, FULL)
        assert pragmas(ledger._db) == ("wal", 30_000, FULL)
    finally:
        store.close()
        ledger.close()


def test_the_session_log_keeps_its_documented_normal_durability(tmp_path: Path) -> None:
    repository = SqliteSessionRepository(tmp_path / "memory.db")
    try:
        assert pragmas(repository._db) == ("wal", 30_000, NORMAL)
    finally:
        repository.close()


def connection_of_another_thread(db: SqliteDatabase) -> sqlite3.Connection:
    opened: list[sqlite3.Connection] = []
    worker = threading.Thread(target=lambda: opened.append(db.connection()))
    worker.start()
    worker.join()
    return opened[0]


@pytest.mark.parametrize(
    "make",
    [
        lambda path: SqliteSessionRepository(path),
        lambda path: SqlitePendingToolCallStore(path),
        lambda path: SqliteNonceLedger(path),
    ],
    ids=["session-log", "pending-store", "nonce-ledger"],
)
def test_close_closes_the_connections_of_every_thread(tmp_path: Path, make: Callable[[Path], object]) -> None:
    store = make(tmp_path / "store.db")
    db: SqliteDatabase = store._db  # type: ignore[attr-defined]
    own, workers = db.connection(), connection_of_another_thread(db)

    store.close()  # type: ignore[attr-defined]

    for connection in (own, workers):
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            connection.execute("SELECT 1")
    assert db.connection().execute("SELECT 1").fetchone() == (1,), "a later call opens a new one"
    store.close()  # type: ignore[attr-defined]


def test_connections_are_numbered_afresh_after_close(tmp_path: Path) -> None:
    # The session log's tail cache keys its stamps by connection number: a reopened file is new.
    db = SqliteDatabase(tmp_path / "numbers.db")
    before = db.number()
    db.close()
    assert db.number() != before
    db.close()
