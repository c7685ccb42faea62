"""The SQLite schema: a file made by the code before the schema was recorded is migrated in place,
a newer one is refused, and the per-turn append (no session-row write) stays right when another
connection deleted or re-created the session."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chatclient import AssistantMessage, UserMessage
from chatclient.errors import ConfigurationError
from chatclient.memory import NewEvent, VersionConflict, turn_events
from chatclient.memory.sqlite import SqliteSessionRepository

_SCHEMA_1 = [  # the DDL of the code before schema 2, verbatim
    "CREATE TABLE IF NOT EXISTS chatclient_session (id TEXT PRIMARY KEY, version BIGINT NOT NULL,"
    " created_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chatclient_session_event (session_id TEXT NOT NULL"
    " REFERENCES chatclient_session(id) ON DELETE CASCADE, seq BIGINT NOT NULL, event_id TEXT NOT NULL,"
    " turn_id TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,"
    " created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session_id, seq), UNIQUE (session_id, event_id))",
    "CREATE TABLE IF NOT EXISTS chatclient_session_lease (session_id TEXT PRIMARY KEY, token TEXT NOT NULL,"
    " expires_at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chatclient_session_event_marks ON chatclient_session_event (session_id, type, seq)"
    " WHERE type <> 'message'",
]


def _turn(n: int) -> list[NewEvent]:
    return turn_events(f"t{n}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")])


def _schema_1_file(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    for ddl in _SCHEMA_1:
        db.execute(ddl)
    db.execute("INSERT INTO chatclient_session VALUES ('c', 4, 100.0)")
    for seq, event in enumerate(_turn(0) + _turn(1), 1):
        db.execute(
            "INSERT INTO chatclient_session_event VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("c", seq, event.event_id, event.turn_id, event.type, event.payload, 100.0),
        )
    db.close()


def _shape(path: Path) -> tuple[list[str], str, int]:
    db = sqlite3.connect(path)
    columns = [r[1] for r in db.execute("PRAGMA table_info(chatclient_session)")]
    (marks,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'chatclient_session_event_marks'").fetchone()
    (version,) = db.execute("SELECT version FROM chatclient_session_schema").fetchone()
    db.close()
    return columns, marks, version


def test_a_file_from_the_previous_code_is_migrated_in_place_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema_1_file(path)
    repository = SqliteSessionRepository(path)
    assert [e.event_id for e in repository.events("c")] == ["t0:0", "t0:1", "t1:0", "t1:1"]
    assert repository.version("c") == 4
    assert repository.append("c", _turn(1)).replayed == 2  # the stored ids are still recognised
    assert repository.append("c", _turn(2), expected_version=4).version == 6
    columns, marks, version = _shape(path)
    assert columns == ["id", "created_at"] and "'usage'" in marks and version == 2
    repository.close()
    again = SqliteSessionRepository(path)  # idempotent: a second open changes nothing
    assert [e.seq for e in again.events("c")] == [1, 2, 3, 4, 5, 6] and _shape(path) == (columns, marks, version)


def test_a_file_from_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqliteSessionRepository(path).append("c", _turn(0))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("UPDATE chatclient_session_schema SET version = 99")
    db.close()
    with pytest.raises(ConfigurationError, match=r"newer chatclient \(schema 99"):
        SqliteSessionRepository(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM chatclient_session_event").fetchone() == (2,)


def test_a_known_session_deleted_or_recreated_by_another_connection_is_appended_right(tmp_path: Path) -> None:
    clock = iter(float(n) for n in range(100, 200))
    mine = SqliteSessionRepository(tmp_path / "s.db", clock=lambda: next(clock))
    other = SqliteSessionRepository(tmp_path / "s.db", clock=lambda: next(clock))
    mine.append("c", _turn(0))  # this store now knows the session
    other.delete("c")
    assert mine.append("c", _turn(1)).version == 2, "a deleted session is created again, numbered from 1"
    other.delete("c")
    other.append("c", _turn(2))  # re-created elsewhere, with another creation time
    assert mine.append("c", _turn(3)).version == 4
    assert [e.event_id for e in other.events("c")] == ["t2:0", "t2:1", "t3:0", "t3:1"]


def test_the_one_statement_append_keeps_replays_and_conflicts(tmp_path: Path) -> None:
    repository = SqliteSessionRepository(tmp_path / "s.db")
    repository.append("c", _turn(0))
    mixed = [*_turn(0)[1:], *_turn(1)]  # one stored id, two new ones
    result = repository.append("c", mixed)
    assert (result.version, result.appended, result.replayed) == (4, 2, 1)
    stored_last = [*_turn(2), _turn(1)[0]]  # the stored id after the new ones: nothing half-written
    result = repository.append("c", stored_last)
    assert (result.version, result.appended, result.replayed) == (6, 2, 1)
    with pytest.raises(VersionConflict):
        repository.append("c", _turn(3), expected_version=2)
    events = repository.events("c")
    assert [e.event_id for e in events] == ["t0:0", "t0:1", "t1:0", "t1:1", "t2:0", "t2:1"]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6] and repository.version("c") == 6
