"""The advisor's window, carried forward from the previous read, is always the window computed
afresh from the read: for any turn shapes, windows, usage events, other writers, deleted and
re-created sessions, and reads of another store."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from chatclient.memory import InMemorySessionRepository, NewEvent, turn_events
from chatclient.memory.window import WindowViews, read_size, window_messages
from chatclient.testing.memory import shaped_turn, turn_shapes

_steps = st.lists(
    st.tuples(st.sampled_from(["turn"] * 6 + ["read-only", "delete", "other-store"]), turn_shapes()),
    min_size=1,
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(steps=_steps, size=st.integers(1, 12), usage=st.booleans())
def test_the_carried_window_is_the_fresh_window(
    steps: list[tuple[str, list[list[int]]]], size: int, usage: bool
) -> None:
    repository, other = InMemorySessionRepository(), InMemorySessionRepository()
    views = WindowViews(size)
    n = 0
    for action, shapes in steps:
        store = other if action == "other-store" else repository
        if action == "delete":
            repository.delete("c")
        elif action != "read-only":
            for shape in shapes:
                n += 1
                events = turn_events(f"t{n}", shaped_turn(f"t{n}", shape))
                if usage:
                    events.append(NewEvent(f"t{n}:usage", f"t{n}", "{}", type="usage"))
                store.append("c", events)
        read = store.events("c", last=read_size(size))
        assert views.of("c", read) == window_messages(read, size)


def test_the_sqlite_tail_carries_the_window_and_sees_another_writer(tmp_path: Path) -> None:
    from chatclient import AssistantMessage, UserMessage
    from chatclient.memory.sqlite import SqliteSessionRepository

    mine, elsewhere = SqliteSessionRepository(tmp_path / "s.db"), SqliteSessionRepository(tmp_path / "s.db")
    views = WindowViews(4)
    for n in range(6):
        writer = elsewhere if n % 3 == 2 else mine
        writer.append("c", turn_events(f"t{n}", [UserMessage(f"q{n}"), AssistantMessage(f"a{n}")]))
        read = mine.events("c", last=read_size(4))
        assert views.of("c", read) == window_messages(read, 4)
        assert views.of("c", read)[-1] == AssistantMessage(f"a{n}")
