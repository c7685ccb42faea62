"""The Starlette endpoints: a turn streams out, the approval comes back and resumes the stored state."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from chatclient import Approver, AssistantMessage, ChatClient, ToolResponseMessage, tool
from chatclient.errors import PendingStateNotFoundError
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import AsyncInMemoryPendingToolCallStore, DecisionCompleteness, InMemoryPendingToolCallStore
from chatclient.ui import approval_id

from .scenarios import Travel

starlette = pytest.importorskip("starlette", reason="the ui extra is not installed")

from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from chatclient.ui.asgi import ChatEndpoints  # noqa: E402


def chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(block[6:]) for block in text.split("\n\n") if block.startswith("data: {")]


def user(text: str, chat: str = "chat-1") -> dict[str, Any]:
    return {"id": chat, "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}]}  # fmt: skip


def answer(approval: str, approved: bool, reason: str | None = None, chat: str = "chat-1") -> dict[str, Any]:
    part = {
        "type": "tool-book_flight", "toolCallId": "call_book_flight", "state": "approval-responded",
        "input": {"flight": "VX205"}, "approval": {"id": approval, "approved": approved, "reason": reason},
    }  # fmt: skip
    return {"id": chat, "messages": [{"id": "m1", "role": "assistant", "parts": [part]}]}


class Served:
    def __init__(self, store: Any = None, travel: Travel | None = None, **options: Any) -> None:
        self.travel = travel or Travel()
        self.paused: dict[str, str] = {}
        self.endpoints = ChatEndpoints(
            self.travel.client,
            self.travel.store if store is None else store,
            on_pause=self.paused.__setitem__,
            **options,
        )
        self.http = TestClient(Starlette(routes=self.endpoints.routes()))

    def post(self, body: Any) -> Any:
        return self.http.post("/api/chat", json=body)

    def approval(self, body: dict[str, Any]) -> str:
        response = self.post(body)
        assert response.status_code == 200, response.text
        (request,) = [c for c in chunks(response.text) if c["type"] == "tool-approval-request"]
        return str(request["approvalId"])


def test_a_turn_streams_with_the_protocol_header_and_pauses_into_the_store() -> None:
    served = Served()
    response = served.post(user("book VX205"))
    assert response.status_code == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    (request,) = [c for c in chunks(response.text) if c["type"] == "tool-approval-request"]
    assert served.paused["chat-1"]
    assert request["approvalId"] == approval_id(served.paused["chat-1"], "call_book_flight")
    assert served.travel.desk.bookings == 0


def test_a_denial_resumes_the_turn_once_and_the_model_reads_the_reason() -> None:
    served = Served()
    approval = served.approval(user("book VX205"))
    resumed = chunks(served.post(answer(approval, False, "book the train instead")).text)
    assert resumed[0] == {"type": "start", "messageId": "m1"}  # the paused message goes on
    assert {"type": "tool-output-denied", "toolCallId": "call_book_flight"} in resumed
    assert "book the train instead" in "".join(c.get("delta", "") for c in resumed)
    assert served.travel.desk.bookings == 0
    again = chunks(served.post(answer(approval, True)).text)  # a replayed or second answer
    assert again[-1] == {"type": "error", "errorText": "The turn failed (PendingStateNotFoundError)."}
    assert served.travel.desk.bookings == 0


def test_an_approval_runs_the_call_once() -> None:
    served = Served()
    approval = served.approval(user("book VX205"))
    resumed = chunks(served.post(answer(approval, True)).text)
    assert {"type": "tool-output-available", "toolCallId": "call_book_flight", "output": "Booked VX205"} in resumed
    assert served.travel.desk.bookings == 1


def test_a_reloaded_page_finds_the_waiting_call_in_the_store_until_it_is_decided() -> None:
    served = Served()
    approval = served.approval(user("book VX205"))
    state_id = served.paused["chat-1"]
    import anyio

    waiting = anyio.run(served.endpoints.approval_requests, state_id)
    assert waiting == [{"approvalId": approval, "toolCallId": "call_book_flight", "toolName": "book_flight",
                        "input": {"flight": "VX205"}}]  # fmt: skip
    served.post(answer(approval, False))
    with pytest.raises(PendingStateNotFoundError):
        anyio.run(served.endpoints.approval_requests, state_id)


def test_an_async_store_works_the_same() -> None:
    served = Served(store=AsyncInMemoryPendingToolCallStore(ttl=600))
    approval = served.approval(user("book VX205"))
    resumed = chunks(served.post(answer(approval, True)).text)
    assert any(c["type"] == "tool-output-available" for c in resumed)
    assert served.travel.desk.bookings == 1


class LoopRecordingStore(InMemoryPendingToolCallStore):
    """A sync store that notes, for each save and peek, whether it ran on an event loop's thread."""

    def __init__(self) -> None:
        super().__init__(ttl=600)
        self.on_loop: list[bool] = []

    def save(self, pending: Any) -> str:
        self.on_loop.append(_on_an_event_loop())
        return super().save(pending)

    def peek(self, state_id: str) -> Any:
        self.on_loop.append(_on_an_event_loop())
        return super().peek(state_id)


def _on_an_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_a_sync_store_is_used_off_the_event_loop() -> None:
    """A SQLite or PostgreSQL round trip on the loop would stall every other stream it serves."""
    import anyio

    store = LoopRecordingStore()
    served = Served(store=store)
    served.approval(user("book VX205"))
    anyio.run(served.endpoints.approval_requests, served.paused["chat-1"])
    assert store.on_loop == [False, False]  # the save when the turn paused, the peek of a reloaded page


def test_a_reply_mixing_gated_and_ungated_calls_resumes_as_the_clients_completeness_rule_says() -> None:
    strict = Served()
    refused = chunks(strict.post(answer(strict.approval(user("check and book VX205")), True)).text)
    assert refused[-1]["type"] == "error"  # ALL_REQUIRED: the person did not decide the status lookup
    assert strict.travel.desk.bookings == 0
    lenient = Served(travel=Travel(DecisionCompleteness.MISSING_UNGATED_MEANS_ALLOW))
    resumed = chunks(lenient.post(answer(lenient.approval(user("check and book VX205")), True)).text)
    outputs = [c["toolCallId"] for c in resumed if c["type"] == "tool-output-available"]
    assert outputs == ["call_flight_status", "call_book_flight"]
    assert lenient.travel.desk.bookings == 1


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("not json", "The body is not JSON"),
        ([1, 2], "The body must be a JSON object"),
        ({"messages": []}, "'id' must be a non-empty string"),
        ({"id": "c", "messages": []}, "'messages' must end with a message object"),
        ({"id": "c", "messages": [{"role": "user", "parts": [{"type": "text", "text": "  "}]}]}, "no text"),
        ({"id": "c", "messages": [{"role": "system", "parts": []}]}, "The last message must be"),
        ({"id": "c", "messages": [{"role": "assistant", "parts": []}]}, "No approval to act on"),
        (answer("not-an-id", True), "Not an approval id"),
        ({"id": "c", "messages": [{"role": "assistant", "parts": [
            {"state": "approval-responded", "approval": {"id": approval_id("s1", "a"), "approved": True}},
            {"state": "approval-responded", "approval": {"id": approval_id("s2", "b"), "approved": True}},
        ]}]}, "more than one paused turn"),
        ({"id": "c", "messages": [{"role": "assistant", "parts": [
            {"state": "approval-responded", "approval": {"id": approval_id("s1", "a"), "approved": "yes"}},
        ]}]}, "approval.approved must be true or false"),
        ({"id": "c", "messages": [{"role": "assistant", "parts": [
            {"state": "approval-responded", "approval": {"id": approval_id("s1", "a"), "approved": True}},
            {"state": "approval-responded", "approval": {"id": approval_id("s1", "a"), "approved": False}},
        ]}]}, "More than one decision"),
    ],
)  # fmt: skip
def test_a_body_it_cannot_act_on_is_refused_with_a_clear_400_and_runs_nothing(body: Any, error: str) -> None:
    served = Served()
    if body == "not json":
        response = served.http.post("/api/chat", content=b"{", headers={"content-type": "application/json"})
    else:
        response = served.post(body)
    assert response.status_code == 400
    assert error in response.json()["error"]
    assert served.travel.desk.bookings == 0
    assert not served.paused


class Refunds:
    def __init__(self) -> None:
        self.made = 0

    @tool(description="Refund an order", requires_confirmation="manager")
    def refund(self, order: str) -> str:
        self.made += 1
        return f"Refunded {order}"


def refunding(prompt: Prompt) -> AssistantMessage | str:
    if isinstance(prompt.messages[-1], ToolResponseMessage):
        return "done"
    return AssistantMessage("", tool_calls=[tool_call("refund", {"order": "A17"}, id="call_refund")])


def test_the_approver_is_the_authenticated_person_and_a_refused_one_leaves_the_state_for_the_right_one() -> None:
    refunds = Refunds()
    store = InMemoryPendingToolCallStore(ttl=600)
    client = ChatClient.builder(ScriptedChatModel(refunding)).default_tools(refunds).build()

    def approver(request: Request) -> Approver:  # the application's authentication, here a header
        name = request.headers["x-user"]
        return Approver(name, roles={"manager"} if name == "ana" else {"agent"})

    endpoints = ChatEndpoints(client, store, approver=approver)
    http = TestClient(Starlette(routes=endpoints.routes()))
    first = chunks(http.post("/api/chat", json=user("refund A17"), headers={"x-user": "bob"}).text)
    (request,) = [c for c in first if c["type"] == "tool-approval-request"]
    body = {"id": "chat-1", "messages": [{"id": "m1", "role": "assistant", "parts": [
        {"type": "tool-refund", "toolCallId": "call_refund", "state": "approval-responded",
         "approval": {"id": request["approvalId"], "approved": True}}]}]}  # fmt: skip
    refused = chunks(http.post("/api/chat", json=body, headers={"x-user": "bob"}).text)
    assert refused[-1] == {"type": "error", "errorText": "The turn failed (ToolCallUnauthorizedError)."}
    assert refunds.made == 0
    allowed = chunks(http.post("/api/chat", json=body, headers={"x-user": "ana"}).text)
    assert {"type": "tool-output-available", "toolCallId": "call_refund", "output": "Refunded A17"} in allowed
    assert refunds.made == 1


def test_agui_runs_pause_into_interrupts_and_resume_from_their_answers() -> None:
    ag_ui = pytest.importorskip("ag_ui.core")
    served = Served()
    start = ag_ui.RunAgentInput(
        thread_id="thread-1", run_id="run-1", messages=[ag_ui.UserMessage(id="u1", role="user", content="book VX205")]
    )
    first = served.http.post("/api/chat/agui", content=start.model_dump_json(by_alias=True))
    assert first.headers["content-type"].startswith("text/event-stream")
    (interrupt,) = chunks(first.text)[-1]["outcome"]["interrupts"]
    assert served.travel.desk.bookings == 0
    answer_run = ag_ui.RunAgentInput(
        thread_id="thread-1", run_id="run-2", messages=[],
        resume=[ag_ui.ResumeEntry(interrupt_id=interrupt["id"], status="resolved",
                                  payload={"approved": False, "reason": "wrong day"})],
    )  # fmt: skip
    resumed = chunks(served.http.post("/api/chat/agui", content=answer_run.model_dump_json(by_alias=True)).text)
    assert resumed[0] == {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-2"}
    assert "wrong day" in next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")["content"]
    assert resumed[-1]["type"] == "RUN_FINISHED" and "outcome" not in resumed[-1]
    assert served.travel.desk.bookings == 0


def test_agui_a_cancelled_interrupt_is_a_denial_and_a_bad_entry_a_400() -> None:
    served = Served()
    run = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "book VX205"}]}
    (interrupt,) = chunks(served.http.post("/api/chat/agui", json=run).text)[-1]["outcome"]["interrupts"]
    bad = {"threadId": "t", "messages": [], "resume": [{"interruptId": interrupt["id"], "status": "resolved"}]}
    response = served.http.post("/api/chat/agui", json=bad)
    assert response.status_code == 400 and "payload" in response.json()["error"]
    cancelled = {"threadId": "t", "messages": [], "resume": [{"interruptId": interrupt["id"], "status": "cancelled"}]}
    events = chunks(served.http.post("/api/chat/agui", json=cancelled).text)
    assert "cancelled" in next(e for e in events if e["type"] == "TOOL_CALL_RESULT")["content"]
    assert served.travel.desk.bookings == 0
