"""SQLite WAL checkpoints run in the store's background thread, never in a request: the WAL is
copied back and starts over without any append doing it, and ``close()`` stops the thread."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from chatclient import AssistantMessage, UserMessage
from chatclient._storage.checkpoint import RESTART_WAIT_MS, checkpoint_once
from chatclient.errors import ConfigurationError
from chatclient.memory import turn_events
from chatclient.memory.sqlite import SqliteSessionRepository


def _wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _append_turns(repository: SqliteSessionRepository, first: int, count: int) -> None:
    for n in range(first, first + count):
        repository.append("c", turn_events(f"t{n}", [UserMessage(f"q{n} " * 200), AssistantMessage(f"a{n}")]))


def test_no_request_checkpoints_and_the_thread_does(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    repository = SqliteSessionRepository(path, checkpoint_every=10)
    checkpointer = repository._db.checkpointer
    assert checkpointer is not None
    statements: list[str] = []
    repository._db.connection().set_trace_callback(statements.append)
    assert repository._db.connection().execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)

    _append_turns(repository, 0, 8)  # with the schema's transaction: 9 commits
    assert not checkpointer.running and checkpointer.checkpoints == 0, "nothing before the 10th commit"
    _append_turns(repository, 8, 1)  # the 10th commit wakes the thread
    assert checkpointer.wait_for(1, timeout=30), "the thread checkpointed"
    assert not any("wal_checkpoint" in s.lower() for s in statements), "a request never checkpoints"
    grown = _wal_size(path)
    _append_turns(repository, 9, 1)
    assert _wal_size(path) == grown, "everything was copied back: the next commit starts the WAL over"
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT count(*) FROM chatclient_session_event").fetchone() == (20,)
        _busy, frames, _copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert 0 < frames < 10, "only the last commit's frames were left to copy"
    assert [e.event_id for e in repository.events("c", last=2)] == ["t9:0", "t9:1"]
    state = checkpointer._state
    assert state is not None
    repository.close()
    assert not state.thread.is_alive() and not checkpointer.running, "close() stops the thread"
    _append_turns(repository, 10, 10)  # a closed store still works: the next wake-up starts a thread again
    assert checkpointer.wait_for(2, timeout=30)
    repository.close()


def test_a_store_without_close_stops_its_thread_when_collected(tmp_path: Path) -> None:
    import gc

    repository = SqliteSessionRepository(tmp_path / "s.db", checkpoint_every=1)
    _append_turns(repository, 0, 1)
    checkpointer = repository._db.checkpointer
    assert checkpointer is not None and checkpointer._state is not None
    thread = checkpointer._state.thread
    del repository, checkpointer
    gc.collect()
    thread.join(20)
    assert not thread.is_alive()


def test_sqlite_s_own_checkpoint_can_be_kept(tmp_path: Path) -> None:
    repository = SqliteSessionRepository(tmp_path / "s.db", checkpoint_every=None)
    assert repository._db.checkpointer is None
    assert repository._db.connection().execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    with pytest.raises(ConfigurationError, match="checkpoint_every"):
        SqliteSessionRepository(tmp_path / "t.db", checkpoint_every=-1)


class _ReaderLeavesDuringTheCopy:
    """The checkpoint thread's connection on a busy store: frames were committed after the passive
    step's limit (here: past a reader's snapshot, which leaves right after the passive step), as a
    steady stream of turns commits while a checkpoint copies."""

    def __init__(self, db: sqlite3.Connection, leave: Callable[[], object]) -> None:
        self._db, self._leave = db, leave

    def execute(self, sql: str) -> sqlite3.Cursor:
        cursor = self._db.execute(sql)  # a PRAGMA's row is ready once execute returns
        if "PASSIVE" in sql:
            self._leave()
        return cursor


def _writer(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE IF NOT EXISTS t (x BLOB)")
    return db


def _frames_left(path: Path) -> int:
    with sqlite3.connect(path) as other:
        frames: int = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
    return frames


def test_the_wal_starts_over_although_commits_arrived_while_it_was_copied(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = _writer(path)
    for _ in range(20):
        writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (20,)
    for _ in range(20):  # past what the passive step may copy while the reader is there
        writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    thread_db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    checkpoint_once(_ReaderLeavesDuringTheCopy(thread_db, lambda: reader.execute("COMMIT")), 10_000, 0)
    writer.execute("INSERT INTO t VALUES (1)")
    assert _frames_left(path) < 5, "the commit after the checkpoint went to the WAL's start, not after its frames"
    assert writer.execute("SELECT count(*) FROM t").fetchone() == (41,)


def test_a_reader_of_old_frames_only_delays_the_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = _writer(path)
    writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)  # holds the snapshot
    writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    thread_db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    checkpoint_once(thread_db, 10_000, 0)  # gives up waiting for the reader: no error, writers not held
    quick = sqlite3.connect(path, isolation_level=None, timeout=0)
    quick.execute("INSERT INTO t VALUES (3)")  # the write lock is free again at once
    reader.execute("COMMIT")
    checkpoint_once(thread_db, 10_000, 0)
    writer.execute("INSERT INTO t VALUES (4)")
    assert _frames_left(path) < 3, "with the reader gone the next pass restarts the WAL"
    assert writer.execute("SELECT count(*) FROM t").fetchone() == (4,)


class _BusyTimeoutSpy:
    """The checkpoint thread's connection, noting the busy timeout each WAL-resetting checkpoint ran with."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.waits: dict[str, int] = {}

    def execute(self, sql: str) -> sqlite3.Cursor:
        for mode in ("RESTART", "TRUNCATE"):
            if f"({mode})" in sql:
                self.waits[mode] = self._db.execute("PRAGMA busy_timeout").fetchone()[0]
        return self._db.execute(sql)


def test_emptying_a_wal_readers_held_never_holds_writers_off_past_the_short_wait(tmp_path: Path) -> None:
    """Past ``limit`` frames the ``TRUNCATE`` checkpoint waits for readers as ``RESTART`` does, for
    ``RESTART_WAIT_MS`` at most: writers queue behind it, so a 30 s wait would stall every turn."""
    path = tmp_path / "s.db"
    writer = _writer(path)
    writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)  # holds the snapshot
    for _ in range(5):
        writer.execute("INSERT INTO t VALUES (randomblob(3000))")
    thread_db = _BusyTimeoutSpy(sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False))
    checkpoint_once(thread_db, 2, 0)  # past the limit: TRUNCATE, which the reader keeps from emptying the WAL
    assert thread_db.waits == {"TRUNCATE": RESTART_WAIT_MS}
    quick = sqlite3.connect(path, isolation_level=None, timeout=0)
    quick.execute("INSERT INTO t VALUES (3)")  # nothing left holding the write lock
    reader.execute("COMMIT")
    checkpoint_once(thread_db, 2, 0)
    assert _frames_left(path) == 0, "with the reader gone the next pass empties the WAL"
    assert writer.execute("SELECT count(*) FROM t").fetchone() == (7,)
