"""Tampering in storage is refused through the client; the warnings that keep a deployment honest
(a sealed state without expiry, a sealed token against an in-process ledger, confirmation switched
off by the environment); role and predicate gates that the environment cannot switch off."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from advisors import ToolCallingAdvisor
from chatclient import ChatClient, tool
from chatclient.errors import PendingStateTamperedError
from chatclient.pending import state as pending_module
from chatclient.pending.sqlite import SqliteNonceLedger
from chatclient.pending.state import InMemoryNonceLedger
from chatclient.testing import ScriptedChatModel
from chatclient.testing.pending import STORE_SECRET, TAMPERINGS, forge
from chatclient.tools import (
    ConfirmationSettings,
    PendingToolCalls,
    SqlitePendingToolCallStore,
    ToolCallConfirmationPolicy,
    ToolCallConfirmationRequired,
    ToolCallDecision,
    ToolCallDecisions,
    ToolCallingManager,
    awaiting_decision,
    seal,
    unseal,
)
from chatclient.tools.approval import Approver
from tests.test_confirmation import ALLOW_BOTH, BookingTools, booking_model, prompt_for, reply

SEAL_SECRET = b"application-secret-0123456789abcdef"


def paused(
    tools: BookingTools, *, ledger: object = None, expires_in: float | None = 3600.0
) -> tuple[PendingToolCalls, ChatClient]:
    manager = ToolCallingManager.builder().pending_expires_in(expires_in).build()
    advisor = ToolCallingAdvisor(manager, nonce_ledger=ledger) if ledger is not None else ToolCallingAdvisor(manager)  # type: ignore[arg-type]
    client = (
        ChatClient.builder(ScriptedChatModel(booking_model)).default_tools(tools).tool_calling_advisor(advisor).build()
    )
    pending = awaiting_decision(client.prompt("Book it").call().chat_client_response())
    assert pending is not None
    return pending, client


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warnings afresh."""
    monkeypatch.setattr(pending_module, "_warned", set())


# ------------------------------------------------------------------------- tampering, through a resume


@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
def test_a_stored_state_rewritten_without_the_secret_is_refused_on_resume(tmp_path: Path, tampering: str) -> None:
    tools = BookingTools()
    pending, client = paused(tools)
    store = SqlitePendingToolCallStore(tmp_path / "p.db", secret=STORE_SECRET)
    state_id = store.save(pending)
    db = store._connect()
    (text,) = db.execute(f"SELECT state FROM {store._table} WHERE id = ?", (state_id,)).fetchone()
    db.execute(f"UPDATE {store._table} SET state = ? WHERE id = ?", (forge(text, TAMPERINGS[tampering]), state_id))
    with pytest.raises(PendingStateTamperedError):
        client.prompt().resume_from(store, state_id, ALLOW_BOTH).call().content()
    assert tools.counts == (0, 0), "nothing ran"
    store.close()


def test_an_untouched_keyed_state_resumes(tmp_path: Path) -> None:
    tools = BookingTools()
    pending, client = paused(tools)
    store = SqlitePendingToolCallStore(tmp_path / "p.db", secret=STORE_SECRET)
    state_id = store.save(pending)
    assert client.prompt().resume_from(store, state_id, ALLOW_BOTH).call().content() == (
        "Flight VX205 is on time / Booked VX205"
    )
    store.close()


def test_an_unkeyed_digest_refuses_an_injected_message_a_careless_writer_left() -> None:
    tools = BookingTools()
    pending, client = paused(tools)
    injected = TAMPERINGS["message injected before the reply"](pending)  # digest not recomputed
    with pytest.raises(PendingStateTamperedError):
        client.prompt().resume(injected, ALLOW_BOTH).call().content()
    assert tools.counts == (0, 0)


# ------------------------------------------------------------------------- expiry and sealing


def test_a_paused_state_expires_after_an_hour_by_default() -> None:
    manager = ToolCallingManager.builder().build()
    with pytest.raises(ToolCallConfirmationRequired) as pause:
        manager.execute_tool_calls(prompt_for(BookingTools()), reply(("b", "book_flight")))
    state = pause.value.pending
    assert state.expires_at is not None and state.expires_at - state.created_at == pytest.approx(3600.0)


def test_sealing_a_state_that_never_expires_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    forever, _ = paused(BookingTools(), expires_in=None)
    expiring, _ = paused(BookingTools())
    with caplog.at_level(logging.WARNING, logger="chatclient.tools"):
        seal(expiring, SEAL_SECRET)
        assert not caplog.records
        seal(forever, SEAL_SECRET)
        seal(forever, SEAL_SECRET)
    assert [r.getMessage() for r in caplog.records if "never expires" in r.getMessage()] != []
    assert len(caplog.records) == 1, "once per process"


def test_a_sealed_token_resumed_against_an_in_process_ledger_warns_once_naming_the_shared_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tools = BookingTools()
    pending, client = paused(tools, ledger=InMemoryNonceLedger())
    kept, _ = paused(tools, ledger=InMemoryNonceLedger())
    with caplog.at_level(logging.WARNING, logger="chatclient.tools"):
        client.prompt().resume(kept, ALLOW_BOTH).call().content()
        assert not caplog.records, "a state kept in memory is not a token: no warning"
        client.prompt().resume(unseal(seal(pending, SEAL_SECRET), SEAL_SECRET), ALLOW_BOTH).call().content()
        again, _ = paused(tools, ledger=InMemoryNonceLedger())
        client.prompt().resume(unseal(seal(again, SEAL_SECRET), SEAL_SECRET), ALLOW_BOTH).call().content()
    (record,) = caplog.records
    for shared in ("SqliteNonceLedger", "RedisNonceLedger", "PostgresNonceLedger"):
        assert shared in record.getMessage()


def test_a_sealed_token_resumed_against_a_shared_ledger_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = SqliteNonceLedger(tmp_path / "nonces.db")
    pending, client = paused(BookingTools(), ledger=ledger)
    with caplog.at_level(logging.WARNING, logger="chatclient.tools"):
        client.prompt().resume(unseal(seal(pending, SEAL_SECRET), SEAL_SECRET), ALLOW_BOTH).call().content()
    assert not caplog.records
    ledger.close()


# ------------------------------------------------------------------------- confirmation off by the environment


class GuardedTools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(description="Plainly gated", requires_confirmation=True)
    def plain(self) -> str:
        self.ran.append("plain")
        return "plain"

    @tool(description="Only a manager may allow it", requires_confirmation="manager")
    def by_role(self) -> str:
        self.ran.append("by_role")
        return "by_role"

    @tool(description="Only its owner may allow it", requires_confirmation=lambda request: True)
    def by_predicate(self) -> str:
        self.ran.append("by_predicate")
        return "by_predicate"

    @tool(description="Ungated")
    def named(self) -> str:
        self.ran.append("named")
        return "named"


def test_confirmation_off_by_the_environment_warns_and_keeps_role_and_predicate_gates(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(ConfirmationSettings.ENABLED_ENV, "off")
    monkeypatch.setenv(ConfirmationSettings.TOOLS_ENV, "named")
    ConfirmationSettings.from_env.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="chatclient.tools"):
            manager = ToolCallingManager.builder().build()
        (record,) = caplog.records
        assert ConfirmationSettings.ENABLED_ENV in record.getMessage()
        tools = GuardedTools()
        calls = [("p", "plain"), ("r", "by_role"), ("q", "by_predicate"), ("n", "named")]
        with pytest.raises(ToolCallConfirmationRequired) as pause:
            manager.execute_tool_calls(prompt_for(tools), reply(*calls, args="{}"))
        assert pause.value.awaiting_ids == ["r", "q"], "role and predicate gates hold; plain and named ones are off"
        assert tools.ran == []
        decisions = ToolCallDecisions.of(
            ToolCallDecision.allow("p"), ToolCallDecision.allow("r"), ToolCallDecision.allow("q"),
            ToolCallDecision.allow("n"), approver=Approver("ana", roles={"manager"}),
        )  # fmt: skip
        manager.execute_tool_calls(prompt_for(tools), reply(*calls, args="{}"), decisions)
        assert sorted(tools.ran) == ["by_predicate", "by_role", "named", "plain"]
    finally:
        ConfirmationSettings.from_env.cache_clear()


def test_confirmation_on_says_nothing_and_gates_everything(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(ConfirmationSettings.ENABLED_ENV, raising=False)
    monkeypatch.setenv(ConfirmationSettings.TOOLS_ENV, "named")
    ConfirmationSettings.from_env.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="chatclient.tools"):
            policy = ToolCallConfirmationPolicy.default()
        assert not caplog.records
        manager = ToolCallingManager.builder().tool_call_confirmation_policy(policy).build()
        calls = [("p", "plain"), ("r", "by_role"), ("q", "by_predicate"), ("n", "named")]
        with pytest.raises(ToolCallConfirmationRequired) as pause:
            manager.execute_tool_calls(prompt_for(GuardedTools()), reply(*calls, args="{}"))
        assert pause.value.awaiting_ids == ["p", "r", "q", "n"]
    finally:
        ConfirmationSettings.from_env.cache_clear()


def test_a_sealed_state_survives_and_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    """The expiry is inside the sealed, digested state: it cannot be moved, only passed."""
    pending, _ = paused(BookingTools(), expires_in=60)
    token = seal(pending, SEAL_SECRET)
    assert unseal(token, SEAL_SECRET) == pending
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 61)
    from chatclient.errors import PendingStateExpiredError

    with pytest.raises(PendingStateExpiredError):
        unseal(token, SEAL_SECRET)
