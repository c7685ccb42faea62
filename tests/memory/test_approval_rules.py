"""Conversation approval rules kept in the conversation's log, on every memory backend, in all four
modes: a remembered decision stops the next pause, rules list and revoke, and memory never sees them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, awaiting_decision, tool
from chatclient._sync import run_sync
from chatclient.errors import ConfigurationError, ToolCallDecisionError
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.repository import AsyncInMemorySessionRepository
from chatclient.memory.rules import AsyncConversationRules, ConversationRules
from chatclient.observation import ChatObserver, DecisionRecord
from chatclient.pending.state import InMemoryPendingToolCallStore
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from chatclient.tools import Approver

BACKENDS = ["memory", "sqlite", "postgres", "redis"]


class Orders:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(requires_confirmation=True)
    def lookup_order(self, order_id: str) -> str:
        """Look an order up."""
        self.ran.append(order_id)
        return f"order {order_id}: shipped"


def _lookup(order_id: str, call_id: str) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call("lookup_order", {"order_id": order_id}, id=call_id)])


class Audit(ChatObserver):
    def __init__(self) -> None:
        self.records: list[DecisionRecord] = []

    def decision_made(self, record: DecisionRecord) -> None:
        self.records.append(record)


class Rules:
    """The rules and the repository of one backend, in the face a mode needs, called the same way."""

    def __init__(self, backend: str, mode: str, tmp_path: Path, prefix: str) -> None:
        self.is_async = mode.startswith("a")
        self.repository = _open(backend, self.is_async, tmp_path, prefix)
        self.rules: Any = (AsyncConversationRules if self.is_async else ConversationRules)(self.repository)

    def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        outcome = getattr(self.rules, method)(*args, **kwargs)
        return run_sync(lambda: outcome) if self.is_async else outcome

    def events(self, conversation: str) -> list[Any]:
        events = self.repository.events(conversation)
        return run_sync(lambda: events) if self.is_async else events

    def close(self) -> None:
        close = getattr(self.repository, "close", None)
        if close is not None:
            result = close()
            if self.is_async and result is not None:
                run_sync(lambda: result)


def _open(backend: str, is_async: bool, tmp_path: Path, prefix: str) -> Any:
    if backend == "memory":
        return AsyncInMemorySessionRepository() if is_async else InMemorySessionRepository()
    if backend == "sqlite":
        from chatclient.memory.sqlite import AsyncSqliteSessionRepository, SqliteSessionRepository

        path = tmp_path / "rules.db"
        return (
            AsyncSqliteSessionRepository(path, prefix=prefix)
            if is_async
            else SqliteSessionRepository(path, prefix=prefix)
        )
    if backend == "redis":
        from chatclient.memory.redis import AsyncRedisSessionRepository, RedisSessionRepository

        url = server_url(REDIS_URL)
        return (
            AsyncRedisSessionRepository(url, prefix=prefix) if is_async else RedisSessionRepository(url, prefix=prefix)
        )
    from chatclient.memory.postgres import AsyncPostgresSessionRepository, PostgresSessionRepository

    url = server_url(POSTGRES_URL)
    if not is_async:
        return PostgresSessionRepository(url, prefix=prefix)
    repository = AsyncPostgresSessionRepository(url, prefix=prefix)
    run_sync(repository.open)
    return repository


@pytest.fixture
def rules_for(tmp_path: Path, prefix: str) -> Iterator[Any]:
    opened: list[Rules] = []

    def make(backend: str, mode: str) -> Rules:
        opened.append(Rules(backend, mode, tmp_path, prefix))
        return opened[-1]

    yield make
    for rules in opened:
        rules.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_remembered_decision_becomes_a_rule_of_the_conversation(backend: str, mode: str, rules_for: Any) -> None:
    rules, orders, audit, store = rules_for(backend, mode), Orders(), Audit(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel(
        [_lookup("A1", "l1"), "A1 has shipped.", _lookup("A2", "l2"), "A2 has shipped too.", _lookup("B1", "l3")]
    )
    client = (
        ChatClient.builder(model)
        .default_advisors(SessionMemoryAdvisor(rules.repository))
        .approval_rules(rules.rules)
        .default_tools(orders)
        .observers(audit)
        .build()
    )
    paused, _ = run_spec(mode, client.prompt("Where is A1?").conversation("shop-1"))
    pending = awaiting_decision(paused)
    assert pending is not None
    ana = Approver("ana", roles={"support"})
    remember = ToolCallDecisions.of(ToolCallDecision.allow("l1", approver=ana, remember="conversation"))
    response, _ = run_spec(mode, client.prompt().resume_from(store, store.save(pending), remember))
    assert response.chat_response is not None and response.chat_response.text == "A1 has shipped."

    kept = rules("list", "shop-1")
    assert [(r.tool, r.allow, r.approver, r.roles) for r in kept] == [("lookup_order", True, "ana", ("support",))]

    # The next call to the tool in this conversation does not pause; the audit names the rule.
    response, _ = run_spec(mode, client.prompt("And A2?").conversation("shop-1"))
    assert awaiting_decision(response) is None
    assert response.chat_response is not None and response.chat_response.text == "A2 has shipped too."
    assert orders.ran == ["A1", "A2"]
    assert (audit.records[-1].call_id, audit.records[-1].by_rule, audit.records[-1].approver_id) == (
        "l2",
        kept[0].id,
        "ana",
    )

    # Memory reads messages only: the rule is in the log, not in the history the model sees.
    assert [m.role for m in model.prompts[-1].messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert {e.type for e in rules.events("shop-1")} == {"message", "approval_rule"}

    # Another conversation has no such rule.
    response, _ = run_spec(mode, client.prompt("Where is B1?").conversation("shop-2"))
    assert awaiting_decision(response) is not None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_rules_list_and_revoke(backend: str, mode: str, rules_for: Any) -> None:
    rules, orders = rules_for(backend, mode), Orders()
    deny = rules("always_deny", "c1", "lookup_*", arguments={"order_id": "X9"}, message="Not that one.", approver="ana")
    allow = rules("always_allow", "c1", "lookup_order", approver="ana")
    assert [r.id for r in rules("list", "c1")] == [deny.id, allow.id]
    model = ScriptedChatModel(
        [_lookup("X9", "l1"), "I may not look X9 up.", _lookup("A1", "l2"), "Shipped.", _lookup("A2", "l3")]
    )
    client = ChatClient.builder(model).approval_rules(rules.rules).default_tools(orders).build()
    response, _ = run_spec(mode, client.prompt("X9?").conversation("c1"))
    assert response.chat_response is not None and response.chat_response.text == "I may not look X9 up."
    assert orders.ran == []  # the deny rule wins over the allow rule
    response, _ = run_spec(mode, client.prompt("A1?").conversation("c1"))
    assert orders.ran == ["A1"]

    assert rules("revoke", "c1", allow.id, approver="ana") is True
    assert rules("revoke", "c1", allow.id) is False  # gone already
    assert [r.id for r in rules("list", "c1")] == [deny.id]
    response, _ = run_spec(mode, client.prompt("A2?").conversation("c1"))
    assert awaiting_decision(response) is not None and orders.ran == ["A1"]  # pauses again


@pytest.mark.parametrize("mode", MODES)
def test_remember_without_conversation_rules_is_refused_before_anything_runs(mode: str) -> None:
    orders, store = Orders(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([_lookup("A1", "l1"), "done"])
    client = ChatClient.builder(model).default_tools(orders).build()
    paused, _ = run_spec(mode, client.prompt("A1?"))
    pending = awaiting_decision(paused)
    assert pending is not None
    state_id = store.save(pending)
    remember = ToolCallDecisions.of(ToolCallDecision.allow("l1", remember="conversation"))
    with pytest.raises(ToolCallDecisionError, match="needs conversation rules"):
        run_spec(mode, client.prompt().resume_from(store, state_id, remember))
    assert orders.ran == []
    plain = ToolCallDecisions.of(ToolCallDecision.allow("l1"))
    run_spec(mode, client.prompt().resume_from(store, state_id, plain))  # the state is still there
    assert orders.ran == ["A1"]


def test_a_predicate_rule_cannot_be_stored_and_an_edit_cannot_be_remembered() -> None:
    from chatclient.tools.rules import ApprovalRule

    rules = ConversationRules(InMemorySessionRepository())
    with pytest.raises(ConfigurationError, match="cannot be stored"):
        rules.add("c1", ApprovalRule(tool="book", allow=True, when=lambda args: True))
    with pytest.raises(ToolCallDecisionError, match="edited call cannot be remembered"):
        ToolCallDecision.allow("l1", arguments={"order_id": "A2"}, remember="conversation")
    with pytest.raises(ConfigurationError, match="AsyncConversationRules"):
        ConversationRules(AsyncInMemorySessionRepository())  # type: ignore[arg-type]
