"""A pause resumes only in its own conversation: the state records it (in the digest), a resume under
another id is refused before anything runs, and a resume that names none goes to the recorded one."""

from __future__ import annotations

import json

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.errors import PendingConversationMismatchError, PendingStateTamperedError
from chatclient.events import TurnPaused
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import InMemoryPendingToolCallStore, seal, unseal
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision

SECRET = b"0123456789abcdef0123456789abcdef"
ALLOW = ToolCallDecisions.of(ToolCallDecision.allow("w"))


class Wire:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(description="Wire money", requires_confirmation=True)
    def wire(self, to: str) -> str:
        self.ran.append(to)
        return f"sent to {to}"


def make(memory: bool = True) -> tuple[ChatClient, Wire, InMemorySessionRepository]:
    tools, repository = Wire(), InMemorySessionRepository()

    def script(prompt: object) -> str | AssistantMessage:
        if prompt.messages[-1].role == "tool":  # type: ignore[attr-defined]
            return "wired"
        return AssistantMessage(tool_calls=[tool_call("wire", {"to": "acct-123"}, id="w")])

    builder = ChatClient.builder(ScriptedChatModel(script)).default_tools(tools)
    if memory:
        builder = builder.default_advisors(SessionMemoryAdvisor(repository))
    return builder.build(), tools, repository


def texts(repository: InMemorySessionRepository, conversation: str) -> list[str]:
    return [e.message().role for e in repository.events(conversation)]


@pytest.mark.parametrize("mode", MODES)
def test_a_pause_records_its_conversation_everywhere_it_travels(mode: str) -> None:
    client, _, _ = make()
    paused, events = run_spec(mode, client.prompt("wire my rent").conversation("alice"))
    pending = awaiting_decision(paused)
    assert pending is not None and pending.conversation_id == "alice"
    assert paused.chat_response is not None
    from_metadata = awaiting_decision(paused.chat_response)
    assert from_metadata == pending, "the reply's metadata carries the same bound state"
    streamed = [e.pending for e in events if isinstance(e, TurnPaused)]
    assert streamed == ([pending] if mode in ("stream", "astream") else [])
    pending.verify()
    again = PendingToolCalls.model_validate_json(pending.model_dump_json())
    again.verify()
    assert again.conversation_id == "alice" and unseal(seal(pending, SECRET), SECRET) == pending


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_in_another_conversation_is_refused_and_the_state_resumes_in_its_own(mode: str) -> None:
    client, tools, repository = make()
    paused, _ = run_spec(mode, client.prompt("alice: wire my rent").conversation("alice"))
    pending = awaiting_decision(paused)
    assert pending is not None
    with pytest.raises(PendingConversationMismatchError, match=r"'alice'.*'bob'") as raised:
        run_spec(mode, client.prompt().conversation("bob").resume(pending, ALLOW))
    assert (raised.value.paused_in, raised.value.resumed_in) == ("alice", "bob")
    assert tools.ran == [] and repository.events("bob") == [] and repository.events("alice") == []
    resumed, _ = run_spec(mode, client.prompt().conversation("alice").resume(pending, ALLOW))
    assert resumed.text == "wired" and tools.ran == ["acct-123"], "the nonce was not spent by the refusal"
    assert texts(repository, "alice") == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_naming_no_conversation_goes_to_the_recorded_one(mode: str) -> None:
    client, tools, repository = make()
    paused, _ = run_spec(mode, client.prompt("wire my rent").conversation("alice"))
    pending = awaiting_decision(paused)
    assert pending is not None
    resumed, _ = run_spec(mode, client.prompt().resume(pending, ALLOW))
    assert resumed.text == "wired" and tools.ran == ["acct-123"]
    assert texts(repository, "alice") == ["user", "assistant", "tool", "assistant"]


def test_a_stored_state_refused_for_its_conversation_stays_in_the_store() -> None:
    client, tools, repository = make()
    store = InMemoryPendingToolCallStore()
    pending = awaiting_decision(client.prompt("wire my rent").conversation("alice").call().chat_client_response())
    assert pending is not None
    state_id = store.save(pending)
    with pytest.raises(PendingConversationMismatchError):
        client.prompt().conversation("bob").resume_from(store, state_id, ALLOW).call().content()
    assert store.peek(state_id) == pending and tools.ran == []
    assert client.prompt().conversation("alice").resume_from(store, state_id, ALLOW).call().content() == "wired"
    assert tools.ran == ["acct-123"] and len(repository.events("alice")) == 4


def test_the_recorded_conversation_is_bound_by_the_digest() -> None:
    client, _, _ = make()
    pending = awaiting_decision(client.prompt("wire my rent").conversation("alice").call().chat_client_response())
    assert pending is not None
    moved = pending.model_copy(update={"conversation_id": "bob"})
    with pytest.raises(PendingStateTamperedError):
        moved.verify()
    dropped = pending.model_copy(update={"conversation_id": ""})
    with pytest.raises(PendingStateTamperedError):
        dropped.verify()
    with pytest.raises(PendingConversationMismatchError):
        pending.in_conversation("bob")


def test_a_state_sealed_before_states_had_a_conversation_still_resumes() -> None:
    """A token from the previous code: its JSON has no ``conversation_id`` and its digest none."""
    plain, tools, _ = make(memory=False)
    pending = awaiting_decision(plain.prompt("wire my rent").call().chat_client_response())
    assert pending is not None and pending.conversation_id == ""
    old_json = json.dumps({k: v for k, v in json.loads(pending.model_dump_json()).items() if k != "conversation_id"})
    old = PendingToolCalls.model_validate_json(old_json)
    from chatclient.pending.state import _b64, _mac

    token = f"{_b64(old_json.encode())}.{_b64(_mac(SECRET, old_json.encode()))}"
    restored = unseal(token, SECRET)
    assert restored == old
    client, tools, repository = make()
    assert client.prompt().conversation("x").resume(restored, ALLOW).call().content() == "wired"
    assert tools.ran == ["acct-123"] and len(repository.events("x")) == 4, "stored in the conversation the app named"
