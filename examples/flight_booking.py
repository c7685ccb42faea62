"""The seed's tool call confirmation demo (Spring AI 2.1.0-RC1), scenario by scenario, offline.

Part 1 drives the ``ToolCallingManager`` directly with hand-built replies, as the seed does:
S1 an ungated call runs; S2 a gated call pauses; S3 a mixed reply pauses as a whole (the ungated
call does not run either); S4 resume S3 with allow + deny; S5 resume S2 with allow.

Part 2 tells the same story through ``ChatClient`` on a scripted model: the loop pauses, the pending
state goes to a store, a person decides, and the turn resumes to the final answer.

Run: ``make demo`` or ``python examples/flight_booking.py``.
"""

from __future__ import annotations

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatResponse,
    Prompt,
    ToolCall,
    ToolCallDecision,
    ToolCallDecisions,
    ToolCallingChatOptions,
    ToolResponseMessage,
    UserMessage,
    awaiting_decision,
    tool,
)
from chatclient.testing import ScriptedChatModel
from chatclient.tools import (
    DEFAULT_DENY_MESSAGE,
    InMemoryPendingToolCallStore,
    ToolCallConfirmationPolicy,
    ToolCallConfirmationRequired,
    ToolCallingManager,
    ToolExecutionResult,
    resolve_tools,
)


class BookingTools:
    """The seed's tools, with call counters."""

    def __init__(self) -> None:
        self.flight_status_count = 0
        self.book_flight_count = 0

    @tool(description="Get the status of a flight")
    def flight_status(self, flight_number: str) -> str:
        self.flight_status_count += 1
        return f"Flight {flight_number} is on time"

    @tool(description="Book a flight", requires_confirmation=True)
    def book_flight(self, flight_number: str) -> str:
        self.book_flight_count += 1
        return f"Booked {flight_number}"

    def counts(self) -> str:
        return f"flightStatusCount={self.flight_status_count} bookFlightCount={self.book_flight_count}"


def reply(*calls: tuple[str, str]) -> ChatResponse:
    """A hand-built model reply holding tool calls ``(id, name)`` for flight VX205."""
    return ChatResponse.of(
        AssistantMessage(
            "", tool_calls=[ToolCall(id=i, name=n, arguments='{"flight_number":"VX205"}') for i, n in calls]
        )
    )


def show(result: ToolExecutionResult) -> None:
    for response in result.tool_responses:
        print(f"  toolResult name={response.name} id={response.id} data={response.response_data}")


def manager_scenarios() -> None:
    manager = (
        ToolCallingManager.builder()
        .tool_call_confirmation_policy(ToolCallConfirmationPolicy.from_tool_metadata())
        .build()
    )
    print("=== chatclient tool call confirmation demo ===")
    print(f"ToolCallingManager class: {type(manager).__module__}.{type(manager).__name__}")
    print(f"DEFAULT_DENY_MESSAGE: {DEFAULT_DENY_MESSAGE}")

    def prompt_for(tools: BookingTools) -> Prompt:
        options = ToolCallingChatOptions(tool_callbacks=resolve_tools([tools]))
        return Prompt([UserMessage("Check VX205, then book it")], options)

    s1 = BookingTools()
    result = manager.execute_tool_calls(prompt_for(s1), reply(("call_status", "flight_status")))
    print("[S1] ungated-only executeToolCalls OK")
    print(f"[S1] {s1.counts()}")
    show(result)

    s2 = BookingTools()
    only_book = reply(("call_book", "book_flight"))
    try:
        manager.execute_tool_calls(prompt_for(s2), only_book)
    except ToolCallConfirmationRequired as pause:
        print("[S2] paused as expected")
        print(f"[S2] awaiting ids: [{', '.join(pause.awaiting_ids)}]")
        print(f"[S2] {s2.counts()} (both should stay 0 until resume)")

    s3 = BookingTools()
    mixed = reply(("call_status2", "flight_status"), ("call_book2", "book_flight"))
    try:
        manager.execute_tool_calls(prompt_for(s3), mixed)
    except ToolCallConfirmationRequired as pause:
        print("[S3] mixed reply paused as a whole")
        print(f"[S3] awaiting ids: [{', '.join(pause.awaiting_ids)}]")
        print(f"[S3] after pause: {s3.counts()}")
        print("[S3] interpretation: ungated flightStatus in the same reply also did not run")

    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("call_status2"),
        ToolCallDecision.deny("call_book2", "User cancelled the booking."),
    )
    result = manager.execute_tool_calls(prompt_for(s3), mixed, decisions)
    print("[S4] resumed with allow(status)+deny(book)")
    print(f"[S4] {s3.counts()}")
    show(result)

    result = manager.execute_tool_calls(
        prompt_for(s2), only_book, ToolCallDecisions.of(ToolCallDecision.allow("call_book"))
    )
    print("[S5] resumed bookFlight with allow")
    print(f"[S5] bookFlightCount={s2.book_flight_count}")
    show(result)


def scripted_model(prompt: Prompt) -> AssistantMessage | str:
    """Plays the model: asks for status and booking together, then reports what happened."""
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return "; ".join(r.response_data for r in last.responses)
    return AssistantMessage(
        "Let me check and book.",
        tool_calls=[
            ToolCall(id="call_status", name="flight_status", arguments='{"flight_number": "VX205"}'),
            ToolCall(id="call_book", name="book_flight", arguments='{"flight_number": "VX205"}'),
        ],
    )


def client_story() -> None:
    tools = BookingTools()
    store = InMemoryPendingToolCallStore(ttl=600)
    client = ChatClient.builder(ScriptedChatModel(scripted_model)).default_tools(tools).build()

    first = client.prompt("Is VX205 on time? Then book it.").call().chat_client_response()
    pending = awaiting_decision(first)
    assert pending is not None
    state_id = store.save(pending)  # the app keeps the state; its client only sees the id
    print(f"[client] paused; awaiting ids: {pending.awaiting_ids}; {tools.counts()}")
    for call in pending.calls:
        print(f"[client]   {call.id} {call.name}({call.arguments}) needs confirmation: {call.requires_confirmation}")

    decisions = ToolCallDecisions.of(
        ToolCallDecision.allow("call_status"),
        ToolCallDecision.allow("call_book", approver="agent@example.com", reason="customer confirmed by phone"),
    )
    answer = client.prompt().resume_from(store, state_id, decisions).call().content()
    print(f"[client] resumed: {answer}")
    print(f"[client] {tools.counts()}")


if __name__ == "__main__":
    manager_scenarios()
    client_story()
