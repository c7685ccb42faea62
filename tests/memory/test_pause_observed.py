"""Observers see a paused state as it is stored and handed back: already bound to its conversation,
so what they record (a trace link, an audit line) names the same state a resume will present."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.observation import ChatObserver
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision


@tool(description="Wire money", requires_confirmation=True)
def wire(to: str) -> str:
    return f"sent to {to}"


class Recorder(ChatObserver):
    def __init__(self) -> None:
        self.seen: list[PendingToolCalls] = []

    def turn_paused(self, pending: PendingToolCalls) -> Mapping[str, str] | None:
        self.seen.append(pending)
        return {"trace": "t-1"}


@pytest.mark.parametrize("mode", MODES)
def test_turn_paused_sees_the_state_bound_to_its_conversation(mode: str) -> None:
    def script(prompt: object) -> str | AssistantMessage:
        if prompt.messages[-1].role == "tool":  # type: ignore[attr-defined]
            return "wired"
        return AssistantMessage(tool_calls=[tool_call("wire", {"to": "acct-123"}, id="w")])

    recorder = Recorder()
    client = (
        ChatClient.builder(ScriptedChatModel(script))
        .default_tools(wire)
        .default_advisors(SessionMemoryAdvisor(InMemorySessionRepository()))
        .observers(recorder)
        .build()
    )
    paused, _ = run_spec(mode, client.prompt("wire my rent").conversation("alice"))
    final = awaiting_decision(paused)
    assert final is not None and final.conversation_id == "alice"
    [seen] = recorder.seen
    assert seen.conversation_id == "alice", "observers see the state as it is handed back"
    assert (seen.nonce, seen.turn_id) == (final.nonce, final.turn_id)
    assert final.metadata["trace"] == "t-1", "what the observer added travels with the bound state"
    final.verify()
