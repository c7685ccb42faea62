"""The SQLite repository reads a windowed view from its cached tail, and still sees everything
another connection or process wrote, deleted or re-created."""

from __future__ import annotations

from pathlib import Path


def test_sqlite_tail_cache_sees_other_writers_and_a_recreated_session(tmp_path: Path) -> None:
    from chatclient import UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    reader, writer = SqliteSessionRepository(tmp_path / "s.db"), SqliteSessionRepository(tmp_path / "s.db")
    writer.append("c1", turn_events("t1", [UserMessage("one"), UserMessage("two")]))
    assert [e.event_id for e in reader.events("c1", last=40)] == ["t1:0", "t1:1"]  # cached from here
    writer.append("c1", turn_events("t2", [UserMessage("three")]))
    assert [e.event_id for e in reader.events("c1", last=2)] == ["t1:1", "t2:0"], "another writer's event is read"
    assert [e.seq for e in reader.events("c1", after_seq=1)] == [2, 3]
    assert [e.seq for e in reader.events("c1")] == [1, 2, 3]
    writer.delete("c1")
    assert reader.events("c1", last=40) == []
    writer.append("c1", turn_events("t9", [UserMessage("new")]))
    assert [e.event_id for e in reader.events("c1", last=40)] == ["t9:0"], "a re-created session is not the cached one"
    assert reader.events("c1", after_seq=5, last=2) == [] and [e.seq for e in reader.events("c1")] == [1]


def _statements(repository: object) -> list[str]:
    """The SQL this thread's connection of ``repository`` runs from now on."""
    seen: list[str] = []
    repository._db.connection().set_trace_callback(seen.append)  # type: ignore[attr-defined]
    return seen


def test_a_turn_on_a_warm_conversation_is_one_check_and_one_write_transaction(tmp_path: Path) -> None:
    from chatclient import AssistantMessage, UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    for n in range(3):
        repository.append("c", turn_events(f"t{n}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")]))
    repository.events("c", last=40)  # the tail is cached and checked from here
    seen = _statements(repository)
    for n in range(3, 6):
        view = repository.events("c", last=40)
        assert [e.seq for e in view] == list(range(1, 2 * n + 1)), "the turns this connection appended are read"
        repository.append("c", turn_events(f"t{n}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")]))
    kinds = [s.split(" (")[0].split(" ")[0] for s in seen]
    assert kinds == ["PRAGMA", "INSERT"] * 3, seen  # one statement, atomic by itself: no BEGIN, COMMIT, session row
    assert [e.event_id for e in repository.events("c", last=2)] == ["t5:0", "t5:1"]


def test_the_unqueried_read_still_sees_every_other_writer(tmp_path: Path) -> None:
    import threading

    from chatclient import UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    other_process = SqliteSessionRepository(tmp_path / "s.db")
    repository.append("c", turn_events("t1", [UserMessage("one")]))
    assert [e.event_id for e in repository.events("c", last=40)] == ["t1:0"]
    other_process.append("c", turn_events("t2", [UserMessage("two")]))
    assert [e.event_id for e in repository.events("c", last=40)] == ["t1:0", "t2:0"], "another connection's commit"
    other_thread = threading.Thread(target=lambda: repository.append("c", turn_events("t3", [UserMessage("3")])))
    other_thread.start()
    other_thread.join()
    assert [e.event_id for e in repository.events("c", last=40)][-1] == "t3:0", "another thread's connection"
    other_process.delete("c")
    assert repository.events("c", last=40) == [], "a delete elsewhere"
    repository.append("c", turn_events("t4", [UserMessage("four")]))
    repository.append("c", turn_events("t4", [UserMessage("four")]))  # a replay: nothing new, the tail unchanged
    assert [(e.seq, e.event_id) for e in repository.events("c", last=40)] == [(1, "t4:0")]


def test_a_refused_append_leaves_the_tail_as_the_log_is(tmp_path: Path) -> None:
    import pytest

    from chatclient import UserMessage
    from chatclient.memory import VersionConflict, turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    repository.append("c", turn_events("t1", [UserMessage("one")]))
    repository.events("c", last=40)
    with pytest.raises(VersionConflict):
        repository.append("c", turn_events("t2", [UserMessage("two")]), expected_version=0)
    assert [e.event_id for e in repository.events("c", last=40)] == ["t1:0"] and repository.version("c") == 1
    repository.append("c", turn_events("t2", [UserMessage("two")]), expected_version=1)
    assert [e.seq for e in repository.events("c", last=40)] == [1, 2] and repository.version("c") == 2


def test_appends_number_after_the_last_seq_seen_and_a_stale_one_takes_the_careful_path(tmp_path: Path) -> None:
    """Two stores on one file (two processes) append to one session in turn, never reading: each
    numbers its turn after the last seq it saw, which the other has just taken; the log's primary
    key refuses that, nothing is written, and the careful path appends the turn after the real end."""
    from chatclient import UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    one, other = SqliteSessionRepository(tmp_path / "s.db"), SqliteSessionRepository(tmp_path / "s.db")
    for n in range(6):
        store = one if n % 2 == 0 else other
        result = store.append("c", turn_events(f"t{n}", [UserMessage(f"q{n}"), UserMessage(f"r{n}")]))
        assert (result.version, result.appended) == (2 * n + 2, 2)
    events = one.events("c")
    assert [e.seq for e in events] == list(range(1, 13)), "contiguous, nothing twice, nothing lost"
    assert [e.event_id for e in events] == [f"t{n}:{k}" for n in range(6) for k in (0, 1)]


def test_a_turn_appended_without_reading_is_one_statement_after_the_first(tmp_path: Path) -> None:
    from chatclient import UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    repository.append("c", turn_events("t0", [UserMessage("q0")]))  # a new session: the careful path
    seen = _statements(repository)
    for n in range(1, 4):
        repository.append("c", turn_events(f"t{n}", [UserMessage(f"q{n}")]))
    assert [s.split(" ")[0] for s in seen] == ["INSERT"] * 3, seen
    assert "c" not in repository._tails._tails, "a session only written to keeps no events in memory"
    assert [e.seq for e in repository.events("c")] == [1, 2, 3, 4]


def test_the_one_statement_append_writes_straight_into_the_log(tmp_path: Path) -> None:
    """No temporary table: reading the target table (for its last seq) or ``RETURNING`` would make
    SQLite buffer the rows in one first, a fresh page per table per turn."""
    from chatclient import UserMessage
    from chatclient.memory import turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    sql, params = repository._sql.new_turn("c", turn_events("t", [UserMessage("a"), UserMessage("b")]), 0, 1.0, 1.0)
    plan = [row[1] for row in repository._db.connection().execute(f"EXPLAIN {sql}", params)]
    assert "Insert" in plan and "OpenEphemeral" not in plan, plan


def test_an_expected_version_past_the_log_is_a_conflict_not_a_gap(tmp_path: Path) -> None:
    import pytest

    from chatclient import UserMessage
    from chatclient.memory import VersionConflict, turn_events
    from chatclient.memory.sqlite import SqliteSessionRepository

    repository = SqliteSessionRepository(tmp_path / "s.db")
    repository.append("c", turn_events("t1", [UserMessage("one")]))
    with pytest.raises(VersionConflict):
        repository.append("c", turn_events("t2", [UserMessage("two")]), expected_version=5)
    assert [e.seq for e in repository.events("c")] == [1] and repository.version("c") == 1
