"""A continued turn is written to memory once, whole, with the ids it would have had; budgets per
conversation count the stored turns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.durable import UsageLimits
from chatclient.errors import ServerError, TurnInProgressError, UsageLimitExceededError
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.log import IdempotencyMismatch
from chatclient.pending.state import InMemoryPendingToolCallStore
from chatclient.responses import Usage
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.turn import turn_of


class Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool
    def weather(self, city: str) -> str:
        """The weather."""
        self.ran.append(city)
        return "sunny"

    @tool(requires_confirmation=True)
    def book(self, hotel: str) -> str:
        """Book a hotel."""
        self.ran.append(hotel)
        return f"booked {hotel}"


WEATHER = AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="w1")])
BOOK = AssistantMessage(None, tool_calls=[tool_call("book", {"hotel": "Ritz"}, id="b1")])


def _stored(repository: InMemorySessionRepository, conversation: str) -> list[tuple[str, str, str]]:
    return [(e.event_id, e.turn_id, e.type) for e in repository.events(conversation)]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_turn_stores_nothing_and_its_continuation_stores_it_once_whole(mode: str) -> None:
    tools, repository = Tools(), InMemorySessionRepository()
    model = ScriptedChatModel([WEATHER, ServerError("503"), "Sunny in Oslo.", "Sunny."], usage=Usage(prompt_tokens=5))
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()
    with pytest.raises(ServerError) as raised:
        run_spec(mode, client.prompt("Weather?").tools(tools).conversation("c1"))
    assert repository.events("c1") == []
    continuation = raised.value.continuation
    response, _ = run_spec(mode, client.prompt().tools(tools).continue_turn(continuation))
    turn = turn_of(response)
    assert turn is not None and turn.id == continuation.progress.turn_id
    stored = _stored(repository, "c1")
    assert [t for _, t, _ in stored] == [turn.id] * 5  # user, tool call, tool result, answer, usage
    assert [m.role for m in (e.message() for e in repository.events("c1") if e.type == "message")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert tools.ran == ["Oslo"]
    with pytest.raises(TurnInProgressError):  # replayed: its journal is gone, refused before any round
        run_spec(mode, client.prompt().tools(tools).continue_turn(continuation))
    assert _stored(repository, "c1") == stored
    unjournaled = replace(continuation, journal_version=None)  # one that does not claim the journal
    with pytest.raises(IdempotencyMismatch):  # replayed with another answer: the turn's ids are taken
        run_spec(mode, client.prompt().tools(tools).continue_turn(unjournaled))
    assert _stored(repository, "c1") == stored


def test_a_retried_resume_in_a_conversation_stores_the_turn_once() -> None:
    tools, repository, store = Tools(), InMemorySessionRepository(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([BOOK, ServerError("503"), "Booked."])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()
    paused = client.prompt("Book it").tools(tools).conversation("c2").call().chat_client_response()
    state_id = store.save(paused.context["chatclient.tool_loop.pending"])
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    with pytest.raises(ServerError):
        client.prompt().tools(tools).resume_from(store, state_id, allow).call().content()
    assert repository.events("c2") == []
    assert client.prompt().tools(tools).resume_from(store, state_id, allow).call().content() == "Booked."
    messages = [e.message().role for e in repository.events("c2") if e.type == "message"]
    assert messages == ["user", "assistant", "tool", "assistant"]
    assert tools.ran == ["Ritz"]


def test_a_per_conversation_budget_counts_the_stored_turns() -> None:
    repository = InMemorySessionRepository()
    model = ScriptedChatModel(["one", "two"], usage=Usage(prompt_tokens=40, completion_tokens=10))
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()
    budget = UsageLimits(total_tokens=50)
    assert client.prompt("a").conversation("c3").usage_limits(per_conversation=budget).call().content() == "one"
    with pytest.raises(UsageLimitExceededError, match="per conversation"):
        client.prompt("b").conversation("c3").usage_limits(per_conversation=budget).call().content()
    assert len(model.prompts) == 1
