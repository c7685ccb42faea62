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
