"""Who may decide: approver authorization of confirmation decisions, and the audit of every decision."""

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
    Approver,
    AssistantMessage,
    ChatClient,
    ChatClientResponse,
    ChatResponse,
    ConfigurationError,
    PendingStateExpiredError,
    PendingStateNotFoundError,
    PendingStateReusedError,
    PendingToolCalls,
    Prompt,
    ToolCall,
    ToolCallDecision,
    ToolCallDecisionError,
    ToolCallDecisions,
    ToolCallingChatOptions,
    ToolCallUnauthorizedError,
    ToolResponseMessage,
    UserMessage,
    awaiting_decision,
    tool,
)
from chatclient.client import ChatClientRequestSpec
from chatclient.observation import ChatObserver, DecisionRecord
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import (
    DecisionCompleteness,
    DecisionRequest,
    InMemoryPendingToolCallStore,
    SqlitePendingToolCallStore,
    ToolCallAuthorizer,
    ToolCallingManager,
    approval,
    resolve_tools,
)
from chatclient.turn import turn_messages

ANA = Approver("ana", roles={"manager"})
BOB = Approver("bob", roles={"agent"})


def small_refund_or_manager(request: DecisionRequest) -> bool:
    """Agents may refund up to 100; managers any amount."""
    return "manager" in request.roles or ("agent" in request.roles and request.arguments.get("amount", 0) <= 100)


class Shop:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(description="Look up an order")
    def order(self, order_id: str) -> str:
        self.ran.append(f"order {order_id}")
        return f"order {order_id} found"

    @tool(description="Cancel an order", requires_confirmation=True)
    def cancel(self, order_id: str) -> str:
        self.ran.append(f"cancel {order_id}")
        return f"cancelled {order_id}"

    @tool(description="Refund an order", requires_confirmation="manager")
    def refund(self, order_id: str, amount: int) -> str:
        self.ran.append(f"refund {order_id} {amount}")
        return f"refunded {amount} on {order_id}"

    @tool(description="Give a voucher", requires_confirmation=small_refund_or_manager)
    def voucher(self, order_id: str, amount: int) -> str:
        self.ran.append(f"voucher {order_id} {amount}")
        return f"voucher of {amount} for {order_id}"


CALLS = {
    "order": ToolCall(id="c_order", name="order", arguments='{"order_id": "A1"}'),
    "cancel": ToolCall(id="c_cancel", name="cancel", arguments='{"order_id": "A1"}'),
    "refund": ToolCall(id="c_refund", name="refund", arguments='{"order_id": "A1", "amount": 500}'),
    "voucher": ToolCall(id="c_voucher", name="voucher", arguments='{"order_id": "A1", "amount": 500}'),
}


def model_asking_for(*names: str) -> ScriptedChatModel:
    def script(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return " / ".join(r.response_data for r in last.responses)
        return AssistantMessage("On it.", tool_calls=[CALLS[n] for n in names])

    return ScriptedChatModel(script)


class Audit(ChatObserver):
    def __init__(self) -> None:
        self.records: list[DecisionRecord] = []

    def decision_made(self, record: DecisionRecord) -> None:
        self.records.append(record)

    @property
    def lines(self) -> list[str]:
        return [str(r) for r in self.records]


def client_for(
    shop: Shop, *names: str, manager: ToolCallingManager | None = None, audit: Audit | None = None
) -> ChatClient:
    builder = ChatClient.builder(model_asking_for(*names)).default_tools(shop)
    if manager is not None:
        builder = builder.tool_calling_advisor(ToolCallingAdvisor(manager))
    if audit is not None:
        builder = builder.observers(audit)
    return builder.build()


def pause(client: ChatClient) -> PendingToolCalls:
    pending = awaiting_decision(client.prompt("Please sort out order A1").call().chat_client_response())
    assert pending is not None
    return pending


def run(mode: str, spec: ChatClientRequestSpec) -> ChatClientResponse:
    return run_spec(mode, spec)[0]


def allow(name: str, approver: object | None, **kwargs: Any) -> ToolCallDecisions:
    return ToolCallDecisions.of(ToolCallDecision.allow(CALLS[name].id, **kwargs), approver=approver)


# ------------------------------------------------------------------------- allow, refuse, then the right person


@pytest.mark.parametrize("mode", MODES)
def test_an_authorized_allow_runs_the_tool_once(mode: str) -> None:
    shop, audit = Shop(), Audit()
    client = client_for(shop, "refund", audit=audit)
    resumed = run(mode, client.prompt().resume(pause(client), allow("refund", ANA, reason="goodwill")))
    assert resumed.text == "refunded 500 on A1"
    assert shop.ran == ["refund A1 500"]
    assert audit.lines == ["allowed refund(c_refund) by ana"]
    record = audit.records[0]
    assert (record.reason, record.approver, record.requires_confirmation) == ("goodwill", ANA, True)
    assert abs(record.at - time.time()) < 3600


@pytest.mark.parametrize("mode", MODES)
def test_an_unauthorized_allow_raises_runs_nothing_and_the_right_person_then_succeeds(mode: str) -> None:
    shop, audit = Shop(), Audit()
    client = client_for(shop, "refund", audit=audit)
    pending = pause(client)
    with pytest.raises(ToolCallUnauthorizedError, match=r"approver 'bob' may not decide .*'c_refund' \(refund\)"):
        run(mode, client.prompt().resume(pending, allow("refund", BOB)))
    assert issubclass(ToolCallUnauthorizedError, ToolCallDecisionError)
    assert shop.ran == [], "nothing of the paused reply ran"
    assert audit.lines == ["refused refund(c_refund) by bob (needs role 'manager')"]

    resumed = run(mode, client.prompt().resume(pending, allow("refund", ANA)))
    assert resumed.text == "refunded 500 on A1" and shop.ran == ["refund A1 500"]
    assert audit.lines[1:] == ["allowed refund(c_refund) by ana"]
    with pytest.raises(PendingStateReusedError):
        run(mode, client.prompt().resume(pending, allow("refund", ANA)))
    assert shop.ran == ["refund A1 500"]


def test_the_error_names_every_refused_call_and_the_approver() -> None:
    shop = Shop()
    client = client_for(shop, "refund", "voucher")
    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("c_refund"), ToolCallDecision.allow("c_voucher"), approver=BOB
    )
    with pytest.raises(ToolCallUnauthorizedError) as refused:
        client.prompt().resume(pause(client), decisions).call().content()
    assert refused.value.approver == "bob"
    assert (refused.value.call_id, refused.value.tool_name) == ("c_refund", "refund")
    assert refused.value.refused == [
        ("c_refund", "refund", "needs role 'manager'"),
        ("c_voucher", "voucher", "needs approval by small_refund_or_manager"),
    ]


# ------------------------------------------------------------------------- through every store


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryPendingToolCallStore(ttl=60)
    return SqlitePendingToolCallStore(tmp_path / "pending.db", ttl=60)


@pytest.mark.parametrize("mode", MODES)
def test_through_a_store_a_refused_decision_leaves_the_state_for_the_right_person(mode: str, store: Any) -> None:
    shop, audit = Shop(), Audit()
    client = client_for(shop, "refund", audit=audit)
    state_id = store.save(pause(client))
    with pytest.raises(ToolCallUnauthorizedError):
        run(mode, client.prompt().resume_from(store, state_id, allow("refund", BOB)))
    assert shop.ran == []
    assert store.peek(state_id).awaiting_ids == ["c_refund"], "the state is still in the store"

    resumed = run(mode, client.prompt().resume_from(store, state_id, allow("refund", ANA)))
    assert resumed.text == "refunded 500 on A1" and shop.ran == ["refund A1 500"]
    with pytest.raises(PendingStateNotFoundError):
        run(mode, client.prompt().resume_from(store, state_id, allow("refund", ANA)))
    assert shop.ran == ["refund A1 500"]
    assert audit.lines == ["refused refund(c_refund) by bob (needs role 'manager')", "allowed refund(c_refund) by ana"]


def test_of_two_authorized_resumes_of_one_stored_state_exactly_one_runs(store: Any) -> None:
    both_checked = threading.Barrier(2, timeout=30)

    waited: set[str] = set()

    def wait_for_the_other(request: DecisionRequest) -> bool:
        name = threading.current_thread().name
        if name.startswith("resume-") and name not in waited:  # the check before the take, not the one after
            waited.add(name)
            both_checked.wait()  # both resumes have peeked and are being authorized: now they race to take
        return True

    shop = Shop()
    manager = ToolCallingManager.builder().decision_authorizer(ToolCallAuthorizer.from_predicate(wait_for_the_other))
    client = client_for(shop, "refund", manager=manager.build())
    state_id = store.save(pause(client))
    outcomes: list[str] = []

    def resume() -> None:
        try:
            outcomes.append(client.prompt().resume_from(store, state_id, allow("refund", ANA)).call().content() or "")
        except PendingStateNotFoundError:
            outcomes.append("not found")

    threads = [threading.Thread(target=resume, name=f"resume-{i}") for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["not found", "refunded 500 on A1"]
    assert shop.ran == ["refund A1 500"]


def test_resume_from_an_unknown_id_runs_nothing(store: Any) -> None:
    shop = Shop()
    client = client_for(shop, "refund")
    with pytest.raises(PendingStateNotFoundError):
        client.prompt().resume_from(store, "no-such-id", allow("refund", ANA)).call().content()
    assert shop.ran == []


def test_resume_from_a_store_without_peek_is_a_clear_error() -> None:
    class TakeOnly:
        def save(self, pending: PendingToolCalls) -> str:
            return "id"

        def take(self, state_id: str) -> PendingToolCalls:
            raise AssertionError("never taken")

    client = client_for(Shop(), "refund")
    with pytest.raises(ConfigurationError, match="TakeOnly has no peek"):
        client.prompt().resume_from(TakeOnly(), "id", allow("refund", ANA))  # type: ignore[arg-type]


def test_peek_leaves_the_state_and_honours_expiry(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pending = pause(client_for(Shop(), "refund"))
    state_id = store.save(pending)
    assert store.peek(state_id) == pending and store.peek(state_id) == pending
    with pytest.raises(PendingStateNotFoundError):
        store.peek("no-such-id")
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 120)
    with pytest.raises((PendingStateExpiredError, PendingStateNotFoundError)):
        store.peek(state_id)


# ------------------------------------------------------------------------- denials and missing approvers


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_by_anyone_is_allowed_by_default_and_restricted_by_configuration(mode: str) -> None:
    deny = ToolCallDecisions.of(ToolCallDecision.deny("c_refund", "Not today.", approver=BOB))
    shop, audit = Shop(), Audit()
    client = client_for(shop, "refund", audit=audit)
    assert run(mode, client.prompt().resume(pause(client), deny)).text == "Not today."
    assert audit.lines == ["denied refund(c_refund) by bob"]

    strict = ToolCallingManager.builder().authorize_denials().build()
    client = client_for(shop, "refund", manager=strict, audit=audit)
    pending = pause(client)
    with pytest.raises(ToolCallUnauthorizedError, match="needs role 'manager'"):
        run(mode, client.prompt().resume(pending, deny))
    by_ana = ToolCallDecisions.of(ToolCallDecision.deny("c_refund", "Not today.", approver=ANA))
    assert run(mode, client.prompt().resume(pending, by_ana)).text == "Not today."
    assert shop.ran == []


@pytest.mark.parametrize("mode", MODES)
def test_a_decision_without_an_approver_is_refused_when_an_authorizer_is_configured(mode: str) -> None:
    shop = Shop()
    client = client_for(shop, "cancel")
    resumed = run(mode, client.prompt().resume(pause(client), allow("cancel", None)))
    assert resumed.text == "cancelled A1", "without an authorizer, a plain gate needs no approver"

    configured = ToolCallingManager.builder().decision_authorizer(ToolCallAuthorizer.anyone()).build()
    client = client_for(shop, "cancel", manager=configured)
    pending = pause(client)
    with pytest.raises(ToolCallUnauthorizedError, match=r"a decision without an approver .* names no approver"):
        run(mode, client.prompt().resume(pending, allow("cancel", None)))
    assert run(mode, client.prompt().resume(pending, allow("cancel", BOB))).text == "cancelled A1"

    elsewhere = (
        ToolCallingManager.builder().decision_authorizer(ToolCallAuthorizer.anyone()).require_approver(False).build()
    )
    client = client_for(shop, "cancel", manager=elsewhere)
    assert run(mode, client.prompt().resume(pause(client), allow("cancel", None))).text == "cancelled A1"


def test_a_role_gate_refuses_a_decision_without_an_approver_even_without_an_authorizer() -> None:
    shop = Shop()
    client = client_for(shop, "refund")
    with pytest.raises(ToolCallUnauthorizedError, match="a decision without an approver"):
        client.prompt().resume(pause(client), allow("refund", None)).call().content()
    assert shop.ran == []


# ------------------------------------------------------------------------- edited arguments, mixed replies


@pytest.mark.parametrize("mode", MODES)
def test_an_edited_allow_is_authorized_against_the_edited_call(mode: str) -> None:
    shop = Shop()
    client = client_for(shop, "voucher")
    pending = pause(client)
    with pytest.raises(ToolCallUnauthorizedError, match="small_refund_or_manager"):
        run(mode, client.prompt().resume(pending, allow("voucher", BOB)))
    edited = allow("voucher", BOB, arguments={"order_id": "A1", "amount": 80})
    resumed = run(mode, client.prompt().resume(pending, edited))
    assert shop.ran == ["voucher A1 80"]
    assert resumed.text is not None and resumed.text.endswith("voucher of 80 for A1")

    shop2, audit = Shop(), Audit()
    client = client_for(shop2, "voucher", audit=audit)
    raised = allow("voucher", BOB, arguments={"order_id": "A1", "amount": 5000})
    with pytest.raises(ToolCallUnauthorizedError):
        run(mode, client.prompt().resume(pause(client), raised))
    assert shop2.ran == []
    assert audit.records[0].arguments == '{"order_id": "A1", "amount": 5000}', "the audit shows the edited call"


@pytest.mark.parametrize("mode", MODES)
def test_a_mixed_reply_with_a_role_gated_call_and_a_plain_gated_call(mode: str) -> None:
    shop, audit = Shop(), Audit()
    client = client_for(shop, "order", "cancel", "refund", audit=audit)
    pending = pause(client)
    assert pending.awaiting_ids == ["c_cancel", "c_refund"]
    by_bob = ToolCallDecisions.of(
        ToolCallDecision.allow("c_order"), ToolCallDecision.allow("c_cancel"), ToolCallDecision.allow("c_refund"),
        approver=BOB,
    )  # fmt: skip
    with pytest.raises(ToolCallUnauthorizedError) as refused:
        run(mode, client.prompt().resume(pending, by_bob))
    assert [r[0] for r in refused.value.refused] == ["c_refund"], "only the call that needs a role is refused"
    assert shop.ran == [], "not even the ungated lookup ran"
    assert audit.lines == ["refused refund(c_refund) by bob (needs role 'manager')"]

    shared = ToolCallDecisions.of(
        ToolCallDecision.allow("c_order", approver=BOB),
        ToolCallDecision.allow("c_cancel", approver=BOB),
        ToolCallDecision.allow("c_refund", approver=ANA),
    )
    run(mode, client.prompt().resume(pending, shared))
    assert sorted(shop.ran) == ["cancel A1", "order A1", "refund A1 500"]
    assert audit.lines[1:] == [
        "allowed order(c_order) by bob",
        "allowed cancel(c_cancel) by bob",
        "allowed refund(c_refund) by ana",
    ]


def test_decisions_filled_in_by_the_completeness_policy_are_audited_without_an_approver() -> None:
    shop, audit = Shop(), Audit()
    manager = ToolCallingManager.builder().decision_completeness(DecisionCompleteness.MISSING_MEANS_DENY).build()
    client = client_for(shop, "order", "refund", manager=manager, audit=audit)
    client.prompt().resume(pause(client), allow("refund", ANA)).call().content()
    assert audit.lines == ["denied order(c_order) by nobody", "allowed refund(c_refund) by ana"]
    assert audit.records[0].decision is None and audit.records[0].reason == "no decision given"


# ------------------------------------------------------------------------- rules


def request_for(approver: object | None, name: str = "refund", allowed: bool = True) -> DecisionRequest:
    return DecisionRequest(approver, CALLS[name], None, allowed)


def test_rules_combine_with_and_and_or() -> None:
    managers = ToolCallAuthorizer.requiring_role("manager")
    auditors = ToolCallAuthorizer.requiring_role("auditor", "lead")
    named = ToolCallAuthorizer.from_predicate(lambda r: r.approver is not None, "a named approver")
    lead = Approver("lee", roles={"lead"})
    assert (managers | auditors).authorizes(request_for(lead))
    assert not (managers & auditors).authorizes(request_for(lead))
    assert (managers & auditors).refusal(request_for(lead)) == "needs role 'manager'"
    assert (managers | auditors).refusal(request_for(BOB)) == (
        "needs role 'manager' | one of the roles ['auditor', 'lead']"
    )
    assert named.refusal(request_for(None)) == "needs a named approver"
    assert ToolCallAuthorizer.anyone().authorizes(request_for(None))


def test_a_role_rule_may_apply_to_some_tools_only() -> None:
    refunds_need_finance = ToolCallAuthorizer.requiring_role("finance", tools=["refund"])
    assert refunds_need_finance.refusal(request_for(BOB, "refund")) == "needs role 'finance'"
    assert refunds_need_finance.authorizes(request_for(BOB, "cancel"))
    assert refunds_need_finance.authorizes(request_for(Approver("fay", roles={"finance"}), "refund"))


def test_builder_rules_and_tool_rules_must_both_agree() -> None:
    shop = Shop()
    only_ana = ToolCallAuthorizer.from_predicate(lambda r: approval.approver_id(r.approver) == "ana", "ana")
    manager = ToolCallingManager.builder().decision_authorizer(only_ana).build()
    client = client_for(shop, "refund", manager=manager)
    pending = pause(client)
    other_manager = Approver("max", roles={"manager"})
    with pytest.raises(ToolCallUnauthorizedError, match="needs ana"):
        client.prompt().resume(pending, allow("refund", other_manager)).call().content()
    with pytest.raises(ToolCallUnauthorizedError, match="needs role 'manager'"):
        client.prompt().resume(pending, allow("refund", "ana")).call().content()
    assert client.prompt().resume(pending, allow("refund", ANA)).call().content() == "refunded 500 on A1"


@pytest.mark.parametrize("as_builder", [True, False], ids=["builder", "constructor"])
def test_a_plain_predicate_is_accepted_as_a_decision_authorizer(as_builder: bool) -> None:
    def only_ana(request: DecisionRequest) -> bool:
        return approval.approver_id(request.approver) == "ana"

    manager = (
        ToolCallingManager.builder().decision_authorizer(only_ana).build()
        if as_builder
        else ToolCallingManager(decision_authorizer=only_ana)
    )
    client = client_for(Shop(), "cancel", manager=manager)
    pending = pause(client)
    with pytest.raises(ToolCallUnauthorizedError, match="needs approval by only_ana"):
        client.prompt().resume(pending, allow("cancel", BOB)).call().content()
    assert client.prompt().resume(pending, allow("cancel", ANA)).call().content() == "cancelled A1"


def test_a_decision_authorizer_that_is_not_callable_is_refused_at_build_time() -> None:
    with pytest.raises(TypeError, match="ToolCallAuthorizer or a predicate"):
        ToolCallingManager.builder().decision_authorizer("ana")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not str"):
        ToolCallingManager(decision_authorizer="ana")  # type: ignore[arg-type]


def test_principals_of_the_applications_own_shape() -> None:
    class User:
        def __init__(self, id: str, roles: list[str]) -> None:
            self.id, self.roles = id, roles

    assert approval.roles_of(User("u1", ["manager"])) == {"manager"}
    assert approval.roles_of({"roles": "manager"}) == {"manager"}
    assert approval.roles_of("just-a-name") == frozenset()
    assert approval.approver_id(User("u1", [])) == "u1"
    assert approval.approver_id(ANA) == "ana" and approval.approver_id(None) is None
    shop = Shop()
    client = client_for(shop, "refund")
    client.prompt().resume(pause(client), allow("refund", User("u1", ["manager"]))).call().content()
    assert shop.ran == ["refund A1 500"]


def test_requires_confirmation_rejects_an_empty_role_and_other_values() -> None:
    with pytest.raises(ValueError, match="non-empty role"):
        tool(requires_confirmation=" ")(lambda: None)
    with pytest.raises(TypeError, match="a role name or a predicate"):
        tool(requires_confirmation=3)(lambda: None)  # type: ignore[call-overload]


def test_the_approver_recorded_with_the_tool_result_is_the_principals_id() -> None:
    shop = Shop()
    client = client_for(shop, "refund")
    resumed = client.prompt().resume(pause(client), allow("refund", ANA, reason="ok")).call().chat_client_response()
    results = [m for m in turn_messages(resumed) if isinstance(m, ToolResponseMessage)]
    assert results[0].responses[0].metadata == {"decision": "allow", "approver": "ana", "reason": "ok"}


# ------------------------------------------------------------------------- property: authorized or nothing runs

gates = st.sampled_from(["none", "anyone", "manager"])
plans = st.lists(st.tuples(gates, st.booleans()), min_size=1, max_size=5)
"""Per call: its gate, and whether the decision allows it."""


@settings(max_examples=80, deadline=None)
@given(plans, st.sampled_from([ANA, BOB, None]))
def test_nothing_runs_unless_every_decision_is_authorized(plan: list[tuple[str, bool]], approver: Any) -> None:
    ran: list[str] = []

    def make(gate: str, index: int) -> Any:
        confirmation: Any = {"none": False, "anyone": True, "manager": "manager"}[gate]

        @tool(name=f"t{index}", description="A tool", requires_confirmation=confirmation)
        def body() -> str:
            ran.append(f"t{index}")
            return "ok"

        return body

    tools = [make(gate, i) for i, (gate, _) in enumerate(plan)]
    calls = [ToolCall(id=f"c{i}", name=f"t{i}", arguments="{}") for i in range(len(plan))]
    reply = ChatResponse.of(AssistantMessage("", tool_calls=calls), id="r")
    prompt = Prompt([UserMessage("go")], ToolCallingChatOptions(tool_callbacks=resolve_tools(tools)))
    decisions = ToolCallDecisions.of(
        [ToolCallDecision.allow(f"c{i}") if ok else ToolCallDecision.deny(f"c{i}") for i, (_, ok) in enumerate(plan)],
        approver=approver,
    )
    is_manager = "manager" in approval.roles_of(approver)
    unauthorized = [f"c{i}" for i, (gate, ok) in enumerate(plan) if ok and gate == "manager" and not is_manager]
    manager = ToolCallingManager.builder().build()
    if unauthorized:
        with pytest.raises(ToolCallUnauthorizedError) as refused:
            manager.execute_tool_calls(prompt, reply, decisions)
        assert [r[0] for r in refused.value.refused] == unauthorized
        assert ran == []
    else:
        manager.execute_tool_calls(prompt, reply, decisions)
        assert sorted(ran) == sorted(f"t{i}" for i, (_, ok) in enumerate(plan) if ok)
