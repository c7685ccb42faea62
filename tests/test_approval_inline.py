"""Approvals without a pause (issue 34, items 1-3): an inline handler, standing rules in code, and a
resume with the person's words — in all four modes."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ToolCallDecision,
    ToolCallDecisions,
    awaiting_decision,
    tool,
)
from chatclient.errors import PendingStateReusedError, ToolCallUnauthorizedError
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.messages import Message, ToolResponseMessage, UserMessage
from chatclient.observation import ChatObserver, DecisionRecord
from chatclient.pending.state import InMemoryPendingToolCallStore
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import Approver, PendingToolCalls, ToolCallAuthorizer, ToolCallingManager
from chatclient.turn import turn_of


class Travel:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(requires_confirmation=True)
    def book(self, flight: str) -> str:
        """Book a flight."""
        self.ran.append(f"book:{flight}")
        return f"booked {flight}"

    @tool(requires_confirmation=True)
    def delete_booking(self, flight: str) -> str:
        """Delete a booking."""
        self.ran.append(f"delete:{flight}")
        return f"deleted {flight}"

    @tool
    def status(self, flight: str) -> str:
        """A flight's status."""
        self.ran.append(f"status:{flight}")
        return "on time"


def _calls(*calls: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call(name, {"flight": f}, id=i) for name, f, i in calls])


BOOK = _calls(("book", "VX205", "b1"))
STATUS_AND_BOOK = _calls(("status", "VX205", "s1"), ("book", "VX205", "b1"))


class Audit(ChatObserver):
    def __init__(self) -> None:
        self.records: list[DecisionRecord] = []

    def decision_made(self, record: DecisionRecord) -> None:
        self.records.append(record)


def _tool_texts(messages: Sequence[Message]) -> list[str]:
    return [r.response_data for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses]


def _content(response: object) -> str | None:
    chat = getattr(response, "chat_response", None)
    return chat.text if chat is not None else None


# ------------------------------------------------------------------------------------- handlers


@pytest.mark.parametrize("mode", MODES)
def test_a_sync_handler_decides_and_the_turn_goes_on_without_a_pause(mode: str) -> None:
    travel, audit, seen = Travel(), Audit(), []
    model = ScriptedChatModel([STATUS_AND_BOOK, "Booked VX205; it is on time."])

    def approve(pending: PendingToolCalls) -> ToolCallDecisions:
        seen.append([c.id for c in pending.calls if c.requires_confirmation])
        assert travel.ran == []  # nothing of the reply ran before the handler answered
        return ToolCallDecisions.of(ToolCallDecision.allow("b1", approver="ana"))

    client = ChatClient.builder(model).approval_handler(approve).observers(audit).build()
    response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel))
    assert awaiting_decision(response) is None
    assert _content(response) == "Booked VX205; it is on time."
    assert seen == [["b1"]]
    assert sorted(travel.ran) == ["book:VX205", "status:VX205"]  # the ungated call ran too
    assert [(r.call_id, r.outcome, r.approver_id) for r in audit.records if r.requires_confirmation] == [
        ("b1", "allowed", "ana")
    ]
    turn = turn_of(response)
    assert turn is not None and turn.rounds == 2 and not turn.paused


@pytest.mark.parametrize("mode", MODES)
def test_an_async_handler_on_a_request(mode: str) -> None:
    travel = Travel()
    model = ScriptedChatModel([BOOK, "Not booked."])

    async def deny(pending: PendingToolCalls) -> ToolCallDecisions:
        return ToolCallDecisions.of(ToolCallDecision.deny("b1", "Too expensive.", approver="ana"))

    client = ChatClient.builder(model).build()
    response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel).approval_handler(deny))
    assert _content(response) == "Not booked."
    assert travel.ran == []
    assert _tool_texts(model.prompts[-1].messages) == ["Too expensive."]


@pytest.mark.parametrize("mode", MODES)
def test_a_handler_that_raises_denies_with_the_reason(mode: str) -> None:
    travel, audit = Travel(), Audit()
    model = ScriptedChatModel([STATUS_AND_BOOK, "I could not book it."])

    def broken(pending: PendingToolCalls) -> ToolCallDecisions:
        raise RuntimeError("approval service down")

    client = ChatClient.builder(model).approval_handler(broken).observers(audit).build()
    response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel))
    assert awaiting_decision(response) is None and _content(response) == "I could not book it."
    assert travel.ran == ["status:VX205"]
    texts = _tool_texts(model.prompts[-1].messages)
    assert texts[0] == "on time"
    assert "approval handler failed (RuntimeError: approval service down)" in texts[1]
    denied = [r for r in audit.records if r.call_id == "b1"]
    assert denied[0].outcome == "denied" and "RuntimeError" in (denied[0].reason or "")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_handler_that_does_not_answer_in_time_denies(mode: str, kind: str) -> None:
    travel, release = Travel(), threading.Event()
    model = ScriptedChatModel([BOOK, "Timed out, not booked."])

    def stuck(pending: PendingToolCalls) -> ToolCallDecisions:
        release.wait(30)  # never set before the timeout: the outcome does not depend on timing
        return ToolCallDecisions.of(ToolCallDecision.allow("b1"))

    async def astuck(pending: PendingToolCalls) -> ToolCallDecisions:
        import asyncio

        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    handler = stuck if kind == "sync" else astuck
    client = ChatClient.builder(model).approval_handler(handler, timeout=0.05).build()
    try:
        response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel))
    finally:
        release.set()
    assert _content(response) == "Timed out, not booked."
    assert travel.ran == []
    assert "did not answer within 0.05 s" in _tool_texts(model.prompts[-1].messages)[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_handler_returning_none_pauses_as_usual(mode: str) -> None:
    model = ScriptedChatModel([BOOK])
    client = ChatClient.builder(model).approval_handler(lambda pending: None).build()
    response, _ = run_spec(mode, client.prompt("Book VX205").tools(Travel()))
    pending = awaiting_decision(response)
    assert pending is not None and pending.awaiting_ids == ["b1"]


@pytest.mark.parametrize("mode", MODES)
def test_a_handlers_decisions_are_authorized_and_single_use_as_a_resume(mode: str) -> None:
    travel, audit = Travel(), Audit()
    manager = ToolCallingManager.builder().decision_authorizer(ToolCallAuthorizer.requiring_role("manager")).build()
    from advisors import ToolCallingAdvisor

    kept: list[PendingToolCalls] = []

    def as_agent(pending: PendingToolCalls) -> ToolCallDecisions:
        kept.append(pending)
        return ToolCallDecisions.of(ToolCallDecision.allow("b1"), approver=Approver("bob", roles={"agent"}))

    model = ScriptedChatModel([BOOK, BOOK, "Booked."])
    client = (
        ChatClient.builder(model)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .approval_handler(as_agent)
        .observers(audit)
        .build()
    )
    with pytest.raises(ToolCallUnauthorizedError, match="needs role 'manager'"):
        run_spec(mode, client.prompt("Book VX205").tools(travel))
    assert travel.ran == []
    assert [(r.outcome, r.approver_id) for r in audit.records] == [("refused", "bob")]

    def as_manager(pending: PendingToolCalls) -> ToolCallDecisions:
        kept.append(pending)
        return ToolCallDecisions.of(ToolCallDecision.allow("b1"), approver=Approver("ana", roles={"manager"}))

    response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel).approval_handler(as_manager))
    assert _content(response) == "Booked." and travel.ran == ["book:VX205"]
    # The state the handler decided is redeemed: resuming it again runs nothing.
    again = ToolCallDecisions.of(ToolCallDecision.allow("b1"), approver=Approver("ana", roles={"manager"}))
    with pytest.raises(PendingStateReusedError):
        run_spec(mode, client.prompt().tools(travel).resume(kept[-1], again))
    assert travel.ran == ["book:VX205"]


# ------------------------------------------------------------------------------------- rules in code


@pytest.mark.parametrize("mode", MODES)
def test_standing_rules_decide_without_a_pause_and_are_reported_by_rule(mode: str) -> None:
    travel, audit = Travel(), Audit()
    model = ScriptedChatModel(
        [_calls(("book", "VX205", "b1"), ("delete_booking", "VX100", "d1")), "Booked one, kept the other."]
    )
    client = (
        ChatClient.builder(model)
        .always_allow("book", when=lambda args: args["flight"].startswith("VX"), approver="ops")
        .always_deny("delete_*", message="Deleting is never allowed here.")
        .observers(audit)
        .build()
    )
    response, _ = run_spec(mode, client.prompt("Book VX205, delete VX100").tools(travel))
    assert awaiting_decision(response) is None and _content(response) == "Booked one, kept the other."
    assert travel.ran == ["book:VX205"]
    assert _tool_texts(model.prompts[-1].messages) == ["booked VX205", "Deleting is never allowed here."]
    by_call = {r.call_id: r for r in audit.records}
    assert by_call["b1"].outcome == "allowed" and by_call["b1"].approver_id == "ops"
    assert by_call["b1"].by_rule is not None and by_call["d1"].by_rule is not None
    assert by_call["d1"].outcome == "denied"
    assert "under rule" in str(by_call["b1"])


@pytest.mark.parametrize("mode", MODES)
def test_a_rule_that_does_not_match_leaves_the_call_to_a_person(mode: str) -> None:
    model = ScriptedChatModel([_calls(("book", "LH400", "b1"))])
    client = ChatClient.builder(model).always_allow("book", arguments={"flight": "VX205"}).build()
    response, _ = run_spec(mode, client.prompt("Book LH400").tools(Travel()))
    assert awaiting_decision(response) is not None


@pytest.mark.parametrize("mode", MODES)
def test_a_rule_whose_author_may_not_decide_decides_nothing(mode: str) -> None:
    from advisors import ToolCallingAdvisor

    travel, audit = Travel(), Audit()
    manager = ToolCallingManager.builder().decision_authorizer(ToolCallAuthorizer.requiring_role("manager")).build()
    model = ScriptedChatModel([BOOK, BOOK, "Booked."])
    client = (
        ChatClient.builder(model)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .observers(audit)
        .always_allow("book", approver=Approver("bob", roles={"agent"}))
        .build()
    )
    response, _ = run_spec(mode, client.prompt("Book VX205").tools(travel))
    assert awaiting_decision(response) is not None and travel.ran == []  # paused for a person
    assert [(r.outcome, r.by_rule is not None) for r in audit.records] == [("refused", True)]
    boss = client.mutate().always_allow("book", approver=Approver("ana", roles={"manager"})).build()
    response, _ = run_spec(mode, boss.prompt("Book VX205").tools(travel))
    assert awaiting_decision(response) is None and travel.ran == ["book:VX205"]


# ------------------------------------------------------------------------------------- words


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_with_words_adds_the_message_after_the_results_and_memory_keeps_it(mode: str) -> None:
    travel, repository, store = Travel(), InMemorySessionRepository(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([BOOK, "Understood: I will look for the 9:40."])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()
    paused, _ = run_spec(mode, client.prompt("Book VX205").tools(travel).conversation("w1"))
    pending = awaiting_decision(paused)
    assert pending is not None
    state_id = store.save(pending)
    deny = ToolCallDecisions.of(ToolCallDecision.deny("b1", "The user declined."))
    spec = client.prompt().tools(travel).resume_from(store, state_id, deny, user="Book the 9:40 instead")
    response, _ = run_spec(mode, spec)
    assert _content(response) == "Understood: I will look for the 9:40."
    sent = model.prompts[-1].messages
    assert isinstance(sent[-2], ToolResponseMessage) and sent[-1] == UserMessage("Book the 9:40 instead")
    turn = turn_of(response)
    assert turn is not None and turn.id == pending.turn_id
    assert [m.role for m in turn.messages] == ["user", "assistant", "tool", "user", "assistant"]
    stored = [e.message() for e in repository.events("w1") if e.type == "message"]
    assert stored == list(turn.messages)
    assert {e.turn_id for e in repository.events("w1")} == {pending.turn_id}  # one turn, not two


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_with_words_without_memory(mode: str) -> None:
    travel = Travel()
    model = ScriptedChatModel([BOOK, "Booked, and noted."])
    client = ChatClient.builder(model).build()
    paused, _ = run_spec(mode, client.prompt("Book VX205").tools(travel))
    pending = awaiting_decision(paused)
    assert pending is not None
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    response, _ = run_spec(mode, client.prompt().tools(travel).resume(pending, allow, user="Window seat, please."))
    assert _content(response) == "Booked, and noted."
    assert model.prompts[-1].messages[-1] == UserMessage("Window seat, please.")
    assert travel.ran == ["book:VX205"]


def test_blank_words_are_refused_before_anything_runs() -> None:
    from chatclient.errors import ConfigurationError

    client = ChatClient.builder(ScriptedChatModel([])).build()
    pending_like = object()
    with pytest.raises(ConfigurationError, match="non-blank"):
        client.prompt().resume(pending_like, ToolCallDecisions(), user="  ")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_a_later_round_decided_by_a_rule_streams_no_pause_and_keeps_the_whole_turn(mode: str) -> None:
    from chatclient.events import ToolResultReady, TurnPaused

    travel = Travel()
    model = ScriptedChatModel([_calls(("status", "VX205", "s1")), BOOK, "On time, and booked."])
    client = ChatClient.builder(model).always_allow("book", approver="ops").build()
    response, events = run_spec(mode, client.prompt("Status, then book").tools(travel))
    assert _content(response) == "On time, and booked." and travel.ran == ["status:VX205", "book:VX205"]
    assert not any(isinstance(e, TurnPaused) for e in events)
    if mode in ("stream", "astream"):
        assert [e.response.response_data for e in events if isinstance(e, ToolResultReady)] == [
            "on time",
            "booked VX205",
        ]
    turn = turn_of(response)
    assert turn is not None and turn.rounds == 3
    assert [m.role for m in turn.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
