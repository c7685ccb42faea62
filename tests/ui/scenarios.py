"""Real turns for the UI encoder tests: a scripted model, a gated and an ungated tool, a pending store.

Each scenario returns the events of a real ``stream().events()`` run, so the encoders are checked on
what the client emits, not on hand-made sequences.
"""

from __future__ import annotations

from collections.abc import Iterator

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import AssistantMessage, ChatClient, ToolCallDecisions, ToolResponseMessage, UserMessage, tool
from chatclient.events import ReasoningDelta, StreamEvent
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import DecisionCompleteness, InMemoryPendingToolCallStore, ToolCallingManager
from chatclient.ui import approval_decision, parse_approval_id


class Desk:
    """A travel desk: a status lookup anyone may run, a booking a person must confirm."""

    def __init__(self) -> None:
        self.bookings = 0

    @tool(description="Is a flight on time")
    def flight_status(self, flight: str) -> str:
        return f"{flight} is on time"

    @tool(description="Book a flight", requires_confirmation=True)
    def book_flight(self, flight: str) -> str:
        self.bookings += 1
        return f"Booked {flight}"

    @tool(description="Cancel a flight")
    def cancel_flight(self, flight: str) -> str:
        raise RuntimeError("the airline's system is down")


def agent(prompt: Prompt) -> AssistantMessage | str:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return "I received: " + " | ".join(r.response_data for r in last.responses)
    text = last.text if isinstance(last, UserMessage) else ""
    if text.startswith("check and book"):
        calls = [tool_call(n, {"flight": "VX205"}, id=f"call_{n}") for n in ("flight_status", "book_flight")]
        return AssistantMessage("On it.", tool_calls=calls)
    name = {"status": "flight_status", "book": "book_flight", "cancel": "cancel_flight"}.get(text.split()[0], "")
    if not name:
        return f"You said {text}"
    return AssistantMessage("On it.", tool_calls=[tool_call(name, {"flight": "VX205"}, id=f"call_{name}")])


class Travel:
    def __init__(self, completeness: DecisionCompleteness | None = None) -> None:
        self.desk = Desk()
        self.store = InMemoryPendingToolCallStore(ttl=600)
        builder = ChatClient.builder(ScriptedChatModel(agent)).default_tools(self.desk)
        if completeness is not None:
            manager = ToolCallingManager.builder().decision_completeness(completeness).build()
            builder = builder.tool_calling_advisor(ToolCallingAdvisor(manager))
        self.client = builder.build()

    def turn(self, text: str) -> Iterator[StreamEvent]:
        return self.client.prompt(text).stream().events()

    def resume(self, approval_id: str, approved: bool, reason: str | None = None) -> Iterator[StreamEvent]:
        state_id, call_id = parse_approval_id(approval_id)
        decisions = ToolCallDecisions.of(approval_decision(call_id, approved, reason))
        return self.client.prompt().resume_from(self.store, state_id, decisions).stream().events()


def with_reasoning(events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
    """A turn whose model thinks aloud first (the scripted model has no reasoning of its own)."""
    yield ReasoningDelta("The user wants ")
    yield ReasoningDelta("a greeting.")
    yield from events


def failing(events: Iterator[StreamEvent], after: int) -> Iterator[StreamEvent]:
    """A turn that breaks after ``after`` events, as a dropped provider connection does."""
    for n, event in enumerate(events):
        if n == after:
            raise ConnectionError("secret-host.internal:443 reset the connection")
        yield event
