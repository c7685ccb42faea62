"""A property (with shrinking): over random turn shapes, turns written one by one with compaction
after each, whatever the strategy, the log keeps every turn once, and the view is always the
latest summary then a contiguous run of whole turns ending with the newest one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chatclient.memory import InMemorySessionRepository, turn_events
from chatclient.memory._compacting import compact, read_log
from chatclient.memory.compaction import Compaction, TokenCount, TurnCount, any_of, view_of
from chatclient.testing.memory import assert_whole_turns, shaped_turn, strategies, turn_shapes


@settings(max_examples=60, deadline=None)
@given(shapes=turn_shapes(), strategy=st.integers(0, 3), turns=st.integers(1, 3), window=st.none() | st.integers(1, 12))
def test_compaction_after_every_turn_never_cuts_a_turn(
    shapes: list[list[int]], strategy: int, turns: int, window: int | None
) -> None:
    repository = InMemorySessionRepository()
    compaction = Compaction(any_of(TurnCount(turns), TokenCount(400)), strategies()[strategy])
    for n, shape in enumerate(shapes):
        repository.append("c", turn_events(f"t{n}", shaped_turn(f"t{n}", shape)))
        boundary, events = read_log(repository, "c", window)
        compact(repository, "c", compaction, view_of(events, boundary), events[-1].seq)
        boundary, events = read_log(repository, "c", window)
        view = view_of(events, boundary)
        assert_whole_turns(view.messages())
        ids = [t.turn_id for t in view.turns]
        assert ids == [f"t{k}" for k in range(n - len(ids) + 1, n + 1)], "a contiguous run ending at the newest turn"
        assert all(len(t.events) == len(shaped_turn(t.turn_id, shapes[int(t.turn_id[1:])])) for t in view.turns)
    log = repository.events("c")
    assert sorted({e.turn_id for e in log if e.type == "message"}) == sorted(f"t{n}" for n in range(len(shapes)))
    assert len([e for e in log if e.type == "message"]) == sum(2 + 2 * len(s) for s in shapes), "nothing removed"
