"""A conversation's usage from its log: one usage event per stored turn, a paused turn counted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.memory import (
    InMemorySessionRepository,
    MessageChatMemoryAdvisor,
    MessageWindowChatMemory,
    SessionMemoryAdvisor,
    SessionRepository,
    asession_usage,
    session_usage,
    turn_events,
)
from chatclient.memory.sqlite import SqliteSessionRepository
from chatclient.memory.usage import USAGE_EVENT, usage_event
from chatclient.memory.window import messages_of
from chatclient.responses import ChatResponse, Usage
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import awaiting_decision

from .test_repository_contract import BACKENDS, close_repository, open_repository

ROUND = Usage(prompt_tokens=10, completion_tokens=4, cache_read_tokens=3)


def times(n: int) -> Usage:
    total = Usage()
    for _ in range(n):
        total += ROUND
    return total


class Tools:
    @tool(description="Get the weather of a city")
    def weather(self, city: str) -> str:
        return f"Sunny in {city}"

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str) -> str:
        return f"Booked {name}"


def calls(tool_name: str, **arguments: str) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call(tool_name, arguments)])


def repositories(tmp_path: Path) -> list[SessionRepository]:
    return [InMemorySessionRepository(), SqliteSessionRepository(tmp_path / "s.db")]


@pytest.mark.parametrize("mode", MODES)
def test_a_sessions_usage_sums_its_turns_and_a_paused_turn_once(mode: str, tmp_path: Path) -> None:
    for repository in repositories(tmp_path):
        script: list[ScriptItem] = [calls("weather", city="Oslo"), "Sunny.", calls("book", name="Ada"), "Booked."]
        model = ScriptedChatModel(script, usage=ROUND, model="m1")
        client = (
            ChatClient.builder(model).default_tools(Tools()).default_advisors(SessionMemoryAdvisor(repository)).build()
        )
        run_spec(mode, client.prompt("Weather?").conversation("c1"))
        assert session_usage(repository, "c1").total == times(2)
        paused, _ = run_spec(mode, client.prompt("Book").conversation("c1"))
        pending = awaiting_decision(paused)
        assert pending is not None and session_usage(repository, "c1").total == times(2), "a pause stores nothing"
        decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
        run_spec(mode, client.prompt().conversation("c1").resume(pending, decisions))
        totals = session_usage(repository, "c1")
        assert totals.total == times(4) and totals.calls == 2 and totals.by_model == {"m1": times(4)}
        assert totals.total == client.usage.total, "the session and the client agree"
        events = repository.events("c1")
        assert [e.type for e in events].count(USAGE_EVENT) == 2
        roles = [m.role for m in messages_of(events)]
        assert roles == ["user", "assistant", "tool", "assistant"] * 2, "message readers skip usage events"


def test_a_replayed_append_counts_nothing_more_and_a_usage_event_is_not_a_message() -> None:
    repository = InMemorySessionRepository()
    reply = ChatResponse.of("Hi", usage=ROUND, model="m1")
    event = usage_event("t1", reply)
    assert event is not None and event.event_id == "t1:usage"
    batch = [*turn_events("t1", [AssistantMessage("Hi")]), event]
    repository.append("c1", batch)
    again = repository.append("c1", batch)
    assert again.appended == 0 and again.replayed == 2
    assert session_usage(repository, "c1").total == ROUND
    with pytest.raises(ValueError, match="is a 'usage' event, not a message"):
        repository.events("c1")[-1].message()


def test_turns_without_usage_store_no_usage_event() -> None:
    repository = InMemorySessionRepository()
    client = ChatClient.builder(ScriptedChatModel(["Hi"])).default_advisors(SessionMemoryAdvisor(repository)).build()
    client.prompt("Hello").conversation("c1").call().content()
    assert [e.type for e in repository.events("c1")] == ["message", "message"]
    assert session_usage(repository, "c1").calls == 0 and session_usage(repository, "unknown").total == Usage()
    assert usage_event("t", None) is None


@pytest.mark.parametrize("backend", BACKENDS)
async def test_every_backend_keeps_the_usage_event(backend: str, tmp_path: Path, prefix: str) -> None:
    """Through the async face (the sync face is the same store): what was stored is what is summed."""
    repository = await open_repository(backend, "async", tmp_path, prefix)
    try:
        for n, model in enumerate(["m1", "m2", "m1"]):
            event = usage_event(f"t{n}", ChatResponse.of("x", usage=ROUND, model=model))
            assert event is not None
            await repository.append("c1", [*turn_events(f"t{n}", [AssistantMessage("x")]), event])
        totals = await asession_usage(repository, "c1")
        assert totals.by_model == {"m1": times(2), "m2": ROUND} and totals.calls == 3
    finally:
        await close_repository(repository)


async def test_asession_usage_reads_a_sync_repository_off_the_loop() -> None:
    repository = InMemorySessionRepository()
    event = usage_event("t1", ChatResponse.of("x", usage=ROUND))
    assert event is not None
    repository.append("c1", [event])
    totals = await asession_usage(repository, "c1")
    assert totals.by_model == {None: ROUND}


@pytest.mark.parametrize("memory_kind", ["session", "chat_memory"])
def test_usage_events_take_no_message_place_in_the_window(memory_kind: str) -> None:
    """A window of 4 messages holds 4 messages whether or not the turns reported usage."""
    seen: dict[bool, list[list[str]]] = {}
    for with_usage in (False, True):
        repository = InMemorySessionRepository()
        memory: SessionMemoryAdvisor
        if memory_kind == "session":
            memory = SessionMemoryAdvisor(repository, window=4)
        else:
            memory = MessageChatMemoryAdvisor(MessageWindowChatMemory(repository, max_messages=4))
        model = ScriptedChatModel(["a1", "a2", "a3", "a4"], usage=ROUND if with_usage else None)
        client = ChatClient.builder(model).default_advisors(memory).build()
        for n in range(1, 5):
            client.prompt(f"q{n}").conversation("c1").call().content()
        seen[with_usage] = [[str(getattr(m, "text", "")) for m in p.messages] for p in model.prompts]
        assert len(repository.events("c1")) == (12 if with_usage else 8)
    assert seen[True] == seen[False]
    assert seen[True][-1] == ["q2", "a2", "q3", "a3", "q4"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_compaction_and_its_window_see_the_same_turns_with_usage_events(
    backend: str, tmp_path: Path, prefix: str
) -> None:
    """Usage events sit among the marked (non-message) events a boundary is looked up in, and in
    the window's read: the model sees the same summary-free view whether or not turns reported usage."""
    from chatclient.memory import Compaction, TurnCount, TurnWindow

    seen: dict[bool, list[list[str]]] = {}
    for with_usage in (False, True):
        folder = tmp_path / str(with_usage)
        folder.mkdir()
        repository = await open_repository(backend, "async", folder, f"{prefix}{int(with_usage)}")
        try:
            memory = SessionMemoryAdvisor(repository, window=6, compaction=Compaction(TurnCount(3), TurnWindow(2)))
            model = ScriptedChatModel([f"a{n}" for n in range(1, 9)], usage=ROUND if with_usage else None)
            client = ChatClient.builder(model).default_advisors(memory).build()
            for n in range(1, 9):
                await client.prompt(f"q{n}").conversation("c1").acall().content()
            seen[with_usage] = [[str(getattr(m, "text", "")) for m in p.messages] for p in model.prompts]
            types = [e.type for e in await repository.events("c1")]
            assert types.count("compaction") >= 1 and types.count("usage") == (8 if with_usage else 0)
        finally:
            await close_repository(repository)
    assert seen[True] == seen[False]
    assert seen[True][-1][-1] == "q8" and len(seen[True][-1]) <= 7
