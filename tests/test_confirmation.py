"""Tool call confirmation: the seed's five scenarios, then the guarantees beyond Spring AI."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisors import ToolCallingAdvisor
from chatclient import (
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatResponse,
    PendingStateExpiredError,
    PendingStateNotFoundError,
    PendingStateTamperedError,
    PendingToolCalls,
    Prompt,
    ToolCall,
    ToolCallDecision,
    ToolCallDecisionError,
    ToolCallDecisions,
    ToolCallingChatOptions,
    ToolResponseMessage,
    UserMessage,
    awaiting_decision,
    tool,
)
from chatclient.client import ChatClientRequestSpec
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import (
    DEFAULT_DENY_MESSAGE,
    ConfirmationSettings,
    DecisionCompleteness,
    InMemoryPendingToolCallStore,
    SqlitePendingToolCallStore,
    ToolCallConfirmationPolicy,
    ToolCallConfirmationRequired,
    ToolCallingManager,
    resolve_tools,
    seal,
    unseal,
)
from tests.conftest import Rendezvous
from tests.test_tool_loop import run

VX205 = '{"flight_number":"VX205"}'


class BookingTools:
    def __init__(self) -> None:
        self.flight_status_count = 0
        self.book_flight_count = 0
        self.threads: list[str] = []

    @tool(description="Get the status of a flight")
    def flight_status(self, flight_number: str) -> str:
        self.flight_status_count += 1
        return f"Flight {flight_number} is on time"

    @tool(description="Book a flight", requires_confirmation=True)
    def book_flight(self, flight_number: str) -> str:
        self.book_flight_count += 1
        return f"Booked {flight_number}"

    @property
    def counts(self) -> tuple[int, int]:
        return self.flight_status_count, self.book_flight_count


def reply(*calls: tuple[str, str], args: str = VX205) -> ChatResponse:
    return ChatResponse.of(
        AssistantMessage("", tool_calls=[ToolCall(id=i, name=n, arguments=args) for i, n in calls]), id="resp-1"
    )


def prompt_for(tools: object) -> Prompt:
    return Prompt(
        [UserMessage("Check VX205, then book it")], ToolCallingChatOptions(tool_callbacks=resolve_tools([tools]))
    )


MANAGER = (
    ToolCallingManager.builder().tool_call_confirmation_policy(ToolCallConfirmationPolicy.from_tool_metadata()).build()
)


# ------------------------------------------------------------------------- the seed, through the manager


def test_default_deny_message_is_the_seeds() -> None:
    assert DEFAULT_DENY_MESSAGE == "The user did not allow this tool call."


def test_s1_an_ungated_call_runs_at_once() -> None:
    tools = BookingTools()
    result = MANAGER.execute_tool_calls(prompt_for(tools), reply(("call_status", "flight_status")))
    assert tools.counts == (1, 0)
    assert [(r.name, r.id, r.response_data) for r in result.tool_responses] == [
        ("flight_status", "call_status", "Flight VX205 is on time")
    ]


def test_s2_a_gated_call_pauses_before_running() -> None:
    tools = BookingTools()
    with pytest.raises(ToolCallConfirmationRequired) as pause:
        MANAGER.execute_tool_calls(prompt_for(tools), reply(("call_book", "book_flight")))
    assert pause.value.awaiting_ids == ["call_book"]
    assert tools.counts == (0, 0)


def test_s3_a_mixed_reply_pauses_as_a_whole_and_awaits_only_the_gated_call() -> None:
    tools = BookingTools()
    with pytest.raises(ToolCallConfirmationRequired) as pause:
        MANAGER.execute_tool_calls(
            prompt_for(tools), reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
        )
    assert pause.value.awaiting_ids == ["call_book2"]
    assert tools.counts == (0, 0), "the ungated call of the same reply did not run either"
    pending = pause.value.pending
    assert [(c.id, c.requires_confirmation) for c in pending.calls] == [("call_status2", False), ("call_book2", True)]
    assert pending.conversation[-1] == pending.reply
    assert [c.id for c in pending.reply.tool_calls] == ["call_status2", "call_book2"]


def test_s4_resume_the_mixed_reply_with_allow_and_deny() -> None:
    tools = BookingTools()
    mixed = reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("call_status2"), ToolCallDecision.deny("call_book2", "User cancelled the booking.")
    )
    result = MANAGER.execute_tool_calls(prompt_for(tools), mixed, decisions)
    assert tools.counts == (1, 0), "a denied tool's body never runs"
    assert [(r.name, r.id, r.response_data) for r in result.tool_responses] == [
        ("flight_status", "call_status2", "Flight VX205 is on time"),
        ("book_flight", "call_book2", "User cancelled the booking."),
    ]


def test_s5_resume_the_gated_call_with_allow() -> None:
    tools = BookingTools()
    only_book = reply(("call_book", "book_flight"))
    result = MANAGER.execute_tool_calls(
        prompt_for(tools), only_book, ToolCallDecisions.of(ToolCallDecision.allow("call_book"))
    )
    assert tools.counts == (0, 1)
    assert [(r.name, r.id, r.response_data) for r in result.tool_responses] == [
        ("book_flight", "call_book", "Booked VX205")
    ]


def test_a_deny_without_message_uses_the_default() -> None:
    tools = BookingTools()
    result = MANAGER.execute_tool_calls(
        prompt_for(tools), reply(("call_book", "book_flight")), ToolCallDecisions.of(ToolCallDecision.deny("call_book"))
    )
    assert result.tool_responses[0].response_data == DEFAULT_DENY_MESSAGE
    assert tools.counts == (0, 0)


# ------------------------------------------------------------------------- the seed, through ChatClient


def booking_model(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " / ".join(r.response_data for r in last.responses)
    return AssistantMessage(
        "Checking and booking.",
        tool_calls=[
            ToolCall(id="call_status2", name="flight_status", arguments=VX205),
            ToolCall(id="call_book2", name="book_flight", arguments=VX205),
        ],
    )


@pytest.mark.parametrize("mode", MODES)
def test_the_seed_through_the_client_in_every_mode(mode: str) -> None:
    tools = BookingTools()
    model = ScriptedChatModel(booking_model)
    client = ChatClient.builder(model).default_tools(tools).build()

    paused = run(mode, client, "Is VX205 on time? Then book it.")
    pending = awaiting_decision(paused)
    assert pending is not None and pending.awaiting_ids == ["call_book2"]
    assert tools.counts == (0, 0)
    chat = paused.chat_response
    assert chat is not None and chat.metadata.extra["awaiting_tool_call_ids"] == ["call_book2"]
    assert awaiting_decision(chat) == pending, "the state also rides in the ChatResponse metadata"

    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("call_status2"), ToolCallDecision.deny("call_book2", "User cancelled the booking.")
    )
    resumed = _run_spec(mode, client.prompt().resume(pending, decisions))
    assert resumed.chat_response is not None
    assert resumed.chat_response.text == "Flight VX205 is on time / User cancelled the booking."
    assert tools.counts == (1, 0)
    assert awaiting_decision(resumed) is None
    assert model.calls == 2, "the resume runs the tools first, then asks the model once"


def _run_spec(mode: str, spec: ChatClientRequestSpec) -> ChatClientResponse:
    return run_spec(mode, spec)[0]


# ------------------------------------------------------------------------- no body runs before decisions (property)

call_plans = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6)
"""Per call: (gated?, allowed on resume?)."""


@settings(max_examples=60, deadline=None)
@given(call_plans)
def test_no_tool_body_runs_before_decisions_and_exactly_the_allowed_ones_after(plan: list[tuple[bool, bool]]) -> None:
    ran: list[str] = []

    @tool(requires_confirmation=True)
    def gated(n: int) -> str:
        """Needs a person."""
        ran.append(f"gated-{n}")
        return "ok"

    @tool
    def free(n: int) -> str:
        """Needs nobody."""
        ran.append(f"free-{n}")
        return "ok"

    calls = [
        ToolCall(id=f"c{i}", name="gated" if g else "free", arguments=f'{{"n": {i}}}') for i, (g, _) in enumerate(plan)
    ]
    response = ChatResponse.of(AssistantMessage(None, tool_calls=calls))
    prompt = Prompt([UserMessage("go")], ToolCallingChatOptions(tool_callbacks=resolve_tools([gated, free])))
    manager = ToolCallingManager.builder().build()
    if any(g for g, _ in plan):
        with pytest.raises(ToolCallConfirmationRequired) as pause:
            manager.execute_tool_calls(prompt, response)
        assert pause.value.awaiting_ids == [f"c{i}" for i, (g, _) in enumerate(plan) if g]
    else:
        manager.execute_tool_calls(prompt, response)
        assert len(ran) == len(plan)
        return
    assert ran == [], "nothing of a paused reply runs"
    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow(f"c{i}") if ok else ToolCallDecision.deny(f"c{i}") for i, (_, ok) in enumerate(plan)
    )
    manager.execute_tool_calls(prompt, response, decisions)
    expected = sorted(f"{'gated' if g else 'free'}-{i}" for i, (g, ok) in enumerate(plan) if ok)
    assert sorted(ran) == expected


# ------------------------------------------------------------------------- decisions that do not fit: nothing runs


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        (
            lambda: ToolCallDecisions.of(ToolCallDecision.allow("call_status2")),
            r"No decision for tool call\(s\) \['call_book2'\]",
        ),
        (
            lambda: ToolCallDecisions.of(
                ToolCallDecision.allow("call_status2"),
                ToolCallDecision.allow("call_book2"),
                ToolCallDecision.allow("other"),
            ),
            r"not in the paused reply: \['other'\]",
        ),
    ],
)
def test_missing_or_unknown_decisions_are_rejected_and_nothing_runs(decisions: Any, message: str) -> None:
    tools = BookingTools()
    mixed = reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
    with pytest.raises(ToolCallDecisionError, match=message):
        MANAGER.execute_tool_calls(prompt_for(tools), mixed, decisions())
    assert tools.counts == (0, 0)


def test_duplicate_decisions_are_rejected() -> None:
    with pytest.raises(ToolCallDecisionError, match="More than one decision"):
        ToolCallDecisions.of(ToolCallDecision.allow("a"), ToolCallDecision.deny("a"))


def test_completeness_missing_means_deny() -> None:
    tools = BookingTools()
    manager = ToolCallingManager.builder().decision_completeness(DecisionCompleteness.MISSING_MEANS_DENY).build()
    mixed = reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
    result = manager.execute_tool_calls(
        prompt_for(tools), mixed, ToolCallDecisions.of(ToolCallDecision.allow("call_status2"))
    )
    assert tools.counts == (1, 0)
    assert result.tool_responses[1].response_data == DEFAULT_DENY_MESSAGE
    assert result.tool_responses[1].metadata["decision"] == "deny"


def test_completeness_missing_ungated_means_allow_but_gated_still_needs_a_decision() -> None:
    tools = BookingTools()
    manager = (
        ToolCallingManager.builder().decision_completeness(DecisionCompleteness.MISSING_UNGATED_MEANS_ALLOW).build()
    )
    mixed = reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
    result = manager.execute_tool_calls(
        prompt_for(tools), mixed, ToolCallDecisions.of(ToolCallDecision.allow("call_book2"))
    )
    assert tools.counts == (1, 1)
    assert [r.response_data for r in result.tool_responses] == ["Flight VX205 is on time", "Booked VX205"]
    with pytest.raises(ToolCallDecisionError, match="call_book2"):
        manager.execute_tool_calls(
            prompt_for(tools), mixed, ToolCallDecisions.of(ToolCallDecision.allow("call_status2"))
        )
    assert tools.counts == (1, 1)


# ------------------------------------------------------------------------- who decided, and edits


def test_approver_and_reason_are_kept_with_the_tool_result_and_seen_by_advisors() -> None:
    seen: list[dict[str, Any]] = []

    class Audit(BaseAdvisor):
        order = ToolCallingAdvisor().order + 10  # inside the loop: sees the next round's request

        def before(self, request: ChatClientRequest) -> ChatClientRequest:
            for message in request.prompt.messages:
                if isinstance(message, ToolResponseMessage):
                    seen.extend(dict(r.metadata) for r in message.responses)
            return request

    tools = BookingTools()
    client = ChatClient.builder(ScriptedChatModel(booking_model)).default_tools(tools).default_advisors(Audit()).build()
    pending = awaiting_decision(client.prompt("Book it").call().chat_client_response())
    assert pending is not None
    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("call_status2", approver="system", reason="read-only"),
        ToolCallDecision.deny("call_book2", "Not today.", approver="alice@example.com", reason="over budget"),
    )
    client.prompt().resume(pending, decisions).call().content()
    assert {"decision": "allow", "approver": "system", "reason": "read-only"} in seen
    assert {"decision": "deny", "approver": "alice@example.com", "reason": "over budget"} in seen


def test_allow_with_edited_arguments_revalidates_and_tells_the_model() -> None:
    tools = BookingTools()
    only_book = reply(("call_book", "book_flight"))
    edited = ToolCallDecision.allow("call_book", arguments={"flight_number": "VX206"}, approver="bob")
    result = MANAGER.execute_tool_calls(prompt_for(tools), only_book, ToolCallDecisions.of(edited))
    response = result.tool_responses[0]
    assert tools.counts == (0, 1)
    assert response.response_data.endswith("Booked VX206")
    assert "changed the arguments" in response.response_data and "VX206" in response.response_data
    assert response.metadata["edited_arguments"] == '{"flight_number": "VX206"}'

    invalid = ToolCallDecision.allow("call_book", arguments={"flight": 1})
    with pytest.raises(ToolCallDecisionError, match=r"edited arguments .* are invalid"):
        MANAGER.execute_tool_calls(prompt_for(tools), only_book, ToolCallDecisions.of(invalid))
    assert tools.counts == (0, 1)


def test_an_edit_that_would_need_confirmation_is_rechecked_against_the_policy() -> None:
    class Bank:
        def __init__(self) -> None:
            self.sent: list[int] = []

        @tool
        def transfer(self, amount: int) -> str:
            """Send money."""
            self.sent.append(amount)
            return f"sent {amount}"

    def large(call: ToolCall, _tool: object) -> bool:
        import json

        return call.name == "transfer" and json.loads(call.arguments).get("amount", 0) > 100

    bank = Bank()
    manager = (
        ToolCallingManager.builder()
        .tool_call_confirmation_policy(ToolCallConfirmationPolicy.from_predicate(large))
        .build()
    )
    small = ChatResponse.of(
        AssistantMessage(
            None,
            tool_calls=[
                ToolCall(id="t", name="transfer", arguments='{"amount": 50}'),
                ToolCall(id="u", name="transfer", arguments='{"amount": 500}'),
            ],
        )
    )
    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("t", arguments={"amount": 5000}), ToolCallDecision.allow("u")
    )
    with pytest.raises(ToolCallDecisionError, match="needs a person's confirmation"):
        manager.execute_tool_calls(prompt_for(bank), small, decisions)
    assert bank.sent == []


# ------------------------------------------------------------------------- bound, single-use, expiring, sealed


def paused_state(tools: BookingTools, expires_in: float | None = None) -> tuple[PendingToolCalls, ChatClient]:
    manager = ToolCallingManager.builder().pending_expires_in(expires_in).build()
    client = (
        ChatClient.builder(ScriptedChatModel(booking_model))
        .default_tools(tools)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .build()
    )
    pending = awaiting_decision(client.prompt("Book it").call().chat_client_response())
    assert pending is not None
    return pending, client


ALLOW_BOTH = ToolCallDecisions.of(ToolCallDecision.allow("call_status2"), ToolCallDecision.allow("call_book2"))


def test_a_pending_state_with_altered_calls_is_rejected() -> None:
    tools = BookingTools()
    pending, client = paused_state(tools)
    reply_message = pending.reply
    altered_call = reply_message.tool_calls[1].model_copy(update={"arguments": '{"flight_number":"XX999"}'})
    altered = pending.model_copy(
        update={
            "conversation": (
                *pending.conversation[:-1],
                reply_message.model_copy(update={"tool_calls": (reply_message.tool_calls[0], altered_call)}),
            )
        }
    )
    with pytest.raises(PendingStateTamperedError):
        client.prompt().resume(altered, ALLOW_BOTH).call().content()
    swapped = pending.model_copy(update={"calls": tuple(reversed(pending.calls))})
    with pytest.raises(PendingStateTamperedError):
        client.prompt().resume(swapped, ALLOW_BOTH).call().content()
    assert tools.counts == (0, 0)


def test_a_state_survives_json_storage_and_still_verifies() -> None:
    tools = BookingTools()
    pending, client = paused_state(tools)
    restored = PendingToolCalls.model_validate_json(pending.model_dump_json())
    assert client.prompt().resume(restored, ALLOW_BOTH).call().content() == "Flight VX205 is on time / Booked VX205"
    assert tools.counts == (1, 1)


def test_decisions_for_other_calls_are_rejected_on_resume() -> None:
    tools = BookingTools()
    pending, client = paused_state(tools)
    other = ToolCallDecisions.of(ToolCallDecision.allow("call_status2"), ToolCallDecision.allow("call_book_other"))
    with pytest.raises(ToolCallDecisionError):
        client.prompt().resume(pending, other).call().content()
    assert tools.counts == (0, 0)


def test_an_expired_state_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = BookingTools()
    pending, client = paused_state(tools, expires_in=60)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 61)  # the expiry is in the digest: let it pass instead
    with pytest.raises(PendingStateExpiredError):
        client.prompt().resume(pending, ALLOW_BOTH).call().content()
    assert tools.counts == (0, 0)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryPendingToolCallStore(ttl=60)
    return SqlitePendingToolCallStore(tmp_path / "pending.db", ttl=60)


def test_a_store_hands_a_state_out_once_so_a_replay_fails(store: Any) -> None:
    tools = BookingTools()
    pending, client = paused_state(tools)
    state_id = store.save(pending)
    assert client.prompt().resume(store.take(state_id), ALLOW_BOTH).call().content()
    with pytest.raises(PendingStateNotFoundError):
        client.prompt().resume(store.take(state_id), ALLOW_BOTH).call().content()
    assert tools.counts == (1, 1), "the replay ran nothing"


def test_concurrent_takes_hand_the_state_to_exactly_one(store: Any) -> None:
    pending, _ = paused_state(BookingTools())
    state_id = store.save(pending)
    winners: list[PendingToolCalls] = []
    losers: list[Exception] = []

    def take() -> None:
        try:
            winners.append(store.take(state_id))
        except PendingStateNotFoundError as exc:
            losers.append(exc)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1 and len(losers) == 7


def test_store_expiry(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pending, _ = paused_state(BookingTools())
    state_id = store.save(pending)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 120)
    with pytest.raises((PendingStateExpiredError, PendingStateNotFoundError)):
        store.take(state_id)


def test_sqlite_store_is_shared_across_instances(tmp_path: Path) -> None:
    pending, _ = paused_state(BookingTools())
    state_id = SqlitePendingToolCallStore(tmp_path / "p.db").save(pending)
    assert SqlitePendingToolCallStore(tmp_path / "p.db").take(state_id) == pending


SECRET = b"application-secret-0123456789abcdef"


def test_a_sealed_state_round_trips_and_a_forged_one_is_rejected() -> None:
    tools = BookingTools()
    pending, _ = paused_state(tools)
    token = seal(pending, SECRET)
    assert unseal(token, SECRET) == pending
    payload, mac = token.split(".")
    import base64

    raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).replace(b"VX205", b"XX999")
    forged = base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + mac
    for bad in (forged, token[:-4] + "AAAA", "garbage", seal(pending, b"another-secret-0123456789abcdef")):
        with pytest.raises(PendingStateTamperedError):
            unseal(bad, SECRET)
    assert tools.counts == (0, 0)


# ------------------------------------------------------------------------- the same guarantees everywhere


@pytest.mark.parametrize("mode", MODES)
def test_allowed_calls_of_a_resumed_reply_run_concurrently(mode: str) -> None:
    together = Rendezvous(3)

    class Slow:
        @tool(requires_confirmation=True)
        def slow_a(self) -> str:
            """Waits for the others."""
            together.wait()
            return "a"

        @tool(requires_confirmation=True)
        async def slow_b(self) -> str:
            """Waits for the others."""
            await together.await_all()
            return "b"

        @tool
        def slow_c(self) -> str:
            """Waits for the others."""
            together.wait()
            return "c"

    calls = [ToolCall(id=n, name=f"slow_{n}", arguments="{}") for n in "abc"]
    client = (
        ChatClient.builder(ScriptedChatModel([AssistantMessage(None, tool_calls=calls), "done"]))
        .default_tools(Slow())
        .build()
    )
    pending = awaiting_decision(run(mode, client, "go"))
    assert pending is not None and pending.awaiting_ids == ["a", "b"]
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(n) for n in "abc")
    resumed = _run_spec(mode, client.prompt().resume(pending, decisions))
    assert together.overlap, "the approved calls must all be running at the same time"
    assert resumed.chat_response is not None and resumed.chat_response.text == "done"


@pytest.mark.parametrize("mode", MODES)
def test_after_a_deny_the_same_call_does_not_pause_again(mode: str) -> None:
    tools = BookingTools()

    def insistent(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage) and "already denied" in last.responses[0].response_data:
            return "Understood, I will not book it."
        return AssistantMessage(
            None, tool_calls=[ToolCall(id=f"b{len(prompt.messages)}", name="book_flight", arguments=VX205)]
        )

    client = ChatClient.builder(ScriptedChatModel(insistent)).default_tools(tools).build()
    pending = awaiting_decision(run(mode, client, "book"))
    assert pending is not None
    denied = ToolCallDecisions.of(ToolCallDecision.deny(pending.awaiting_ids[0], "No."))
    resumed = _run_spec(mode, client.prompt().resume(pending, denied))
    assert awaiting_decision(resumed) is None, "the model asked again for the denied call: no second pause"
    assert resumed.chat_response is not None and resumed.chat_response.text == "Understood, I will not book it."
    assert tools.counts == (0, 0)


# ------------------------------------------------------------------------- policies and settings


def test_policies_by_name_predicate_and_or() -> None:
    tools = BookingTools()
    callbacks = {c.name: c for c in resolve_tools([tools])}
    status = ToolCall(id="s", name="flight_status", arguments=VX205)
    book = ToolCall(id="b", name="book_flight", arguments=VX205)
    by_name = ToolCallConfirmationPolicy.by_tool_names("flight_status")
    metadata = ToolCallConfirmationPolicy.from_tool_metadata()
    assert by_name.requires_confirmation(status, callbacks["flight_status"])
    assert not by_name.requires_confirmation(book, callbacks["book_flight"])
    both = by_name | metadata
    assert both.requires_confirmation(status, callbacks["flight_status"])
    assert both.requires_confirmation(book, callbacks["book_flight"])
    predicate = ToolCallConfirmationPolicy.from_predicate(lambda call, cb: "VX2" in call.arguments)
    assert predicate.requires_confirmation(status, callbacks["flight_status"])


def test_builder_combines_several_policies_with_or() -> None:
    tools = BookingTools()
    manager = (
        ToolCallingManager.builder()
        .tool_call_confirmation_policy(
            ToolCallConfirmationPolicy.by_tool_names("flight_status"), ToolCallConfirmationPolicy.from_tool_metadata()
        )
        .build()
    )
    with pytest.raises(ToolCallConfirmationRequired) as pause:
        manager.execute_tool_calls(prompt_for(tools), reply(("s", "flight_status"), ("b", "book_flight")))
    assert pause.value.awaiting_ids == ["s", "b"]


def test_settings_from_the_environment() -> None:
    assert ConfirmationSettings.parse({}) == ConfirmationSettings(True, frozenset())
    parsed = ConfirmationSettings.parse(
        {"CHATCLIENT_TOOL_CONFIRMATION_ENABLED": "false", "CHATCLIENT_TOOL_CONFIRMATION_TOOLS": " a, b ,,"}
    )
    assert parsed == ConfirmationSettings(False, frozenset({"a", "b"}))
    tools = BookingTools()
    off = ToolCallingManager.builder().tool_call_confirmation_policy(ToolCallConfirmationPolicy.default(parsed)).build()
    off.execute_tool_calls(prompt_for(tools), reply(("b", "book_flight")))
    assert tools.counts == (0, 1), "with confirmation switched off the gated tool runs"
    extra = ToolCallConfirmationPolicy.default(ConfirmationSettings(True, frozenset({"flight_status"})))
    with pytest.raises(ToolCallConfirmationRequired):
        ToolCallingManager.builder().tool_call_confirmation_policy(extra).build().execute_tool_calls(
            prompt_for(tools), reply(("s", "flight_status"))
        )
