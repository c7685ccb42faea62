"""Who may decide: a support agent cannot approve a refund that only a manager may, offline.

A refund tool is gated for the role ``manager``. The turn pauses and its state goes to a store; the
agent's approval is refused before anything runs and leaves the state in the store; the manager's
approval then runs the refund once; a replay finds nothing. Every decision goes through the audit
logger (an observer), refused ones too.

Run: ``python examples/approvers.py``.
"""

from __future__ import annotations

import datetime

from chatclient import (
    Approver,
    AssistantMessage,
    ChatClient,
    PendingStateNotFoundError,
    Prompt,
    ToolCall,
    ToolCallDecision,
    ToolCallDecisions,
    ToolCallUnauthorizedError,
    ToolResponseMessage,
    awaiting_decision,
    tool,
)
from chatclient.observation import ChatObserver, DecisionRecord
from chatclient.testing import ScriptedChatModel
from chatclient.tools import InMemoryPendingToolCallStore


class AuditLog(ChatObserver):
    """The audit logger of docs/confirmation.md: one line per decision (allowed, denied or refused)."""

    def decision_made(self, record: DecisionRecord) -> None:
        when = datetime.datetime.fromtimestamp(record.at, datetime.timezone.utc).isoformat(timespec="seconds")
        print(
            f"audit: {record.outcome} tool={record.tool} call={record.call_id} approver={record.approver_id}"
            f" reason={record.reason!r} refusal={record.refusal!r} at={when}"
        )


class SupportTools:
    def __init__(self) -> None:
        self.refunds = 0

    @tool(description="Look up an order")
    def order_status(self, order_id: str) -> str:
        return f"Order {order_id} arrived damaged"

    @tool(description="Refund an order", requires_confirmation="manager")
    def refund(self, order_id: str, amount: int) -> str:
        self.refunds += 1
        return f"Refunded {amount} EUR on {order_id}"


def scripted_model(prompt: Prompt) -> AssistantMessage | str:
    """Plays the model: looks the order up and asks for the refund together, then reports."""
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return "; ".join(r.response_data for r in last.responses)
    return AssistantMessage(
        "Let me check and refund.",
        tool_calls=[
            ToolCall(id="call_status", name="order_status", arguments='{"order_id": "A17"}'),
            ToolCall(id="call_refund", name="refund", arguments='{"order_id": "A17", "amount": 120}'),
        ],
    )


def main() -> None:
    tools = SupportTools()
    store = InMemoryPendingToolCallStore(ttl=600)
    client = ChatClient.builder(ScriptedChatModel(scripted_model)).default_tools(tools).observers(AuditLog()).build()

    first = client.prompt("Order A17 arrived damaged; please refund it.").call().chat_client_response()
    pending = awaiting_decision(first)
    assert pending is not None
    state_id = store.save(pending)
    print(f"paused; awaiting {pending.awaiting_ids}; refunds={tools.refunds}")

    def decisions(approver: Approver) -> ToolCallDecisions:
        return ToolCallDecisions.of(
            ToolCallDecision.allow("call_status"),
            ToolCallDecision.allow("call_refund", reason="customer sent photos"),
            approver=approver,  # the person the application authenticated
        )

    agent = Approver("bob@support", roles={"agent"})
    try:
        client.prompt().resume_from(store, state_id, decisions(agent)).call().content()
    except ToolCallUnauthorizedError as refused:
        print(f"refused: {refused}")
    print(f"after the refusal: refunds={tools.refunds}; state still stored: {store.peek(state_id).awaiting_ids}")

    manager = Approver("ana@support", roles={"manager"})
    answer = client.prompt().resume_from(store, state_id, decisions(manager)).call().content()
    print(f"resumed by the manager: {answer}; refunds={tools.refunds}")

    try:
        client.prompt().resume_from(store, state_id, decisions(manager)).call().content()
    except PendingStateNotFoundError:
        print(f"a replay finds nothing; refunds={tools.refunds}")


if __name__ == "__main__":
    main()
