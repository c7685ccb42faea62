"""Extending the tool loop, and rendering a streamed turn from its events.

Two ``ToolLoopExtension``s run in one loop: ``OnlyRelevantTools`` narrows the tools offered each
round (as tool search does) and ``AuditTrail`` (async) records every round. Then the turn is
streamed with ``.events()``, paused on a gated tool, and resumed: the events a UI would render.
Run it: ``python examples/loop_extensions.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from advisors.tool_calling import LoopState, ToolLoopExtension
from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ToolCallDecision,
    ToolCallDecisions,
    ToolCallingChatOptions,
    awaiting_decision,
    tool,
    turn_messages,
)
from chatclient.events import (
    RoundFinished,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolResultReady,
    TurnFinished,
    TurnPaused,
)
from chatclient.testing import ScriptedChatModel, tool_call


class Bank:
    @tool(description="Balance of an account")
    def balance(self, account: str) -> str:
        return f"{account}: 1,024.00 EUR"

    @tool(description="Send money", requires_confirmation=True)
    def transfer(self, to: str, amount: int) -> str:
        return f"Sent {amount} EUR to {to}"

    @tool(description="Close an account")
    def close_account(self, account: str) -> str:
        return f"Closed {account}"


class OnlyRelevantTools(ToolLoopExtension):
    """Offers only the tools whose name appears in the user's words (a stand-in for tool search)."""

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        options = request.prompt.options
        assert isinstance(options, ToolCallingChatOptions)
        asked = str(state.turn_messages[0].model_dump().get("text", "")).lower()
        chosen = tuple(t for t in options.tool_callbacks if t.name.split("_")[0] in asked)
        return request.with_prompt(request.prompt.with_options(options.model_copy(update={"tool_callbacks": chosen})))


class AuditTrail(ToolLoopExtension):
    """An async extension: it could write to a database; here it keeps lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        await asyncio.sleep(0)
        chat = response.chat_response
        calls = [c.name for c in chat.tool_calls] if chat else []
        self.lines.append(f"round {state.round} of turn {state.turn_id[:8]}: {calls or 'answer'}")
        return response


def render(events: Iterable[StreamEvent]) -> None:
    """What a chat UI shows for each event."""
    for event in events:
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        elif isinstance(event, ToolCallReady):
            print(f"  [calling {event.name} {event.arguments}]")
        elif isinstance(event, ToolResultReady):
            print(f"  [{event.name} -> {event.result}]")
        elif isinstance(event, RoundFinished):
            reason = event.finish_reason.value if event.finish_reason else "-"
            print(f"\n  (round {event.round} finished: {reason})")
        elif isinstance(event, TurnPaused):
            print(f"  [waiting for a person: {event.pending.awaiting_ids}]")
        elif isinstance(event, TurnFinished):
            print(f"\n  final: {event.response.text!r}")


def main() -> None:
    model = ScriptedChatModel(
        [
            AssistantMessage("Let me look.", tool_calls=[tool_call("balance", {"account": "main"}, id="b1")]),
            AssistantMessage(None, tool_calls=[tool_call("transfer", {"to": "Ana", "amount": 100}, id="t1")]),
            "Done: 100 EUR sent to Ana.",
        ]
    )
    audit = AuditTrail()
    client = (
        ChatClient.builder(model).default_tools(Bank()).default_tool_loop_extensions(OnlyRelevantTools(), audit).build()
    )
    stream = client.prompt("Check my balance, then transfer 100 EUR to Ana").stream()
    render(stream.events())
    first = model.prompts[0].options
    names = [t.name for t in first.tool_callbacks] if isinstance(first, ToolCallingChatOptions) else []
    print(f"tools offered in round 1: {names}")

    pending = awaiting_decision(stream.response)
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow("t1", approver="ana@example.com", reason="own account"))
    resumed = client.prompt().resume(pending, decisions).stream()
    render(resumed.events())
    print("turn:", " > ".join(type(m).__name__ for m in turn_messages(resumed.response)))
    for line in audit.lines:
        print("audit:", line)


if __name__ == "__main__":
    main()
