"""A property: whatever mix of turns, pauses, resumes, denials, retried resumes and concurrent turns
runs on one conversation, its log holds each finished turn once, whole and contiguous, and nothing
of a turn still waiting for a decision."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatclient import (
    AssistantMessage,
    ChatClient,
    PendingStateReusedError,
    ToolCallDecision,
    ToolCallDecisions,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor, SessionRepository
from chatclient.memory.sqlite import SqliteSessionRepository
from chatclient.prompt import Prompt
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision


class Tools:
    @tool(description="Weather")
    def weather(self, city: str) -> str:
        return f"Sunny in {city}"

    @tool(description="Book", requires_confirmation=True)
    def book(self, name: str) -> str:
        return f"Booked {name}"


def reply(prompt: Prompt) -> AssistantMessage | str:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return "done"
    text = last.text if isinstance(last, UserMessage) else ""
    if text.startswith("gated"):
        return AssistantMessage(tool_calls=[tool_call("book", {"name": text})])
    if text.startswith("tool"):
        return AssistantMessage(tool_calls=[tool_call("weather", {"city": text})])
    return f"answer to {text}"


OPS = st.lists(
    st.tuples(
        st.sampled_from(["plain", "tool", "pause", "resume", "deny", "retry", "concurrent"]),
        st.sampled_from(MODES),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=12,
)


def check_log(repository: SessionRepository, finished: set[str]) -> None:
    events = repository.events("c")
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "gap-free"
    order: list[str] = []
    for event in events:
        if not order or order[-1] != event.turn_id:
            order.append(event.turn_id)
    assert len(order) == len(set(order)), "each turn contiguous and never twice"
    assert set(order) == finished, "every finished turn, and no turn still waiting"
    for turn_id in order:
        turn = [e for e in events if e.turn_id == turn_id]
        assert [e.event_id for e in turn] == [f"{turn_id}:{n}" for n in range(len(turn))]
        messages = [e.message() for e in turn]
        assert isinstance(messages[0], UserMessage), "a turn starts with its user message"
        last = messages[-1]
        assert isinstance(last, AssistantMessage) and not last.tool_calls, "and ends with an answer"


class Scenario:
    """One conversation driven by a list of operations; checks the log after each."""

    def __init__(self, repository: SessionRepository) -> None:
        self.repository = repository
        self.client = (
            ChatClient.builder(ScriptedChatModel(reply))
            .default_tools(Tools())
            .default_advisors(SessionMemoryAdvisor(repository, window=8))
            .build()
        )
        self.paused: list[PendingToolCalls] = []
        self.resumed: list[PendingToolCalls] = []
        self.finished: set[str] = set()

    def turn(self, text: str, mode: str) -> Any:
        response, _ = run_spec(mode, self.client.prompt(text).conversation("c"))
        return response

    def resume(self, pending: PendingToolCalls, mode: str, allow: bool) -> None:
        call = pending.awaiting_ids[0]
        decision = ToolCallDecision.allow(call) if allow else ToolCallDecision.deny(call, "no")
        run_spec(mode, self.client.prompt().conversation("c").resume(pending, ToolCallDecisions.of(decision)))

    def pause(self, n: int, mode: str) -> None:
        pending = awaiting_decision(self.turn(f"gated {n}", mode))
        assert pending is not None
        self.paused.append(pending)

    def decide(self, mode: str, pick: int, allow: bool) -> None:
        if self.paused:
            pending = self.paused.pop(pick % len(self.paused))
            self.resume(pending, mode, allow)
            self.resumed.append(pending)
            self.finished.add(pending.turn_id)

    def retry(self, mode: str, pick: int) -> None:
        if not self.resumed:
            return
        try:
            self.resume(self.resumed[pick % len(self.resumed)], mode, allow=True)
        except PendingStateReusedError:
            return
        raise AssertionError("a second resume of one state must be refused")

    def concurrent(self, n: int) -> None:
        barrier, ids, errors = threading.Barrier(2), [], []

        def racer(k: int) -> None:
            barrier.wait()
            try:
                ids.append(turn_of_response(self.turn(f"tool {n}.{k}", "call")))
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=racer, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        self.finished.update(ids)

    def run(self, ops: list[tuple[str, str, int]]) -> None:
        for n, (op, mode, pick) in enumerate(ops):
            if op in ("plain", "tool"):
                self.finished.add(turn_of_response(self.turn(f"{op} {n}", mode)))
            elif op == "pause":
                self.pause(n, mode)
            elif op in ("resume", "deny"):
                self.decide(mode, pick, allow=op == "resume")
            elif op == "retry":
                self.retry(mode, pick)
            else:
                self.concurrent(n)
            check_log(self.repository, self.finished)


def run_ops(repository: SessionRepository, ops: list[tuple[str, str, int]]) -> None:
    Scenario(repository).run(ops)


def turn_of_response(response: Any) -> str:
    from chatclient.turn import turn_of

    turn = turn_of(response)
    assert turn is not None
    return turn.id


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_in_memory_log_never_holds_a_partial_or_duplicated_turn(ops: list[tuple[str, str, int]]) -> None:
    run_ops(InMemorySessionRepository(), ops)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_sqlite_log_never_holds_a_partial_or_duplicated_turn(tmp_path: Path, ops: list[tuple[str, str, int]]) -> None:
    import uuid

    repository = SqliteSessionRepository(tmp_path / f"{uuid.uuid4().hex}.db")
    try:
        run_ops(repository, ops)
    finally:
        repository.close()
