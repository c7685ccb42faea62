"""The UI message stream encoder, read back by the ``ai`` package (npm) that web front ends use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chatclient.events import TurnPaused
from chatclient.ui import UI_MESSAGE_STREAM_HEADERS, UIMessageStreamEncoder, encode_ui_message_stream
from chatclient.ui.vercel import DONE

from .node_check import read_with_ai_package
from .scenarios import Travel, failing, with_reasoning


def chunks_of(stream: str) -> list[dict[str, Any]]:
    assert stream.endswith(DONE)
    events = stream[: -len(DONE)].split("\n\n")[:-1]
    assert all(event.startswith("data: ") for event in events), events
    return [json.loads(event[len("data: ") :]) for event in events]


def parts(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["type"], p.get("state", "")) for p in message["parts"]]


def test_a_paused_turn_is_text_then_the_call_then_its_approval_request() -> None:
    travel = Travel()
    stream = "".join(encode_ui_message_stream(travel.turn("book VX205"), message_id="m1", save=travel.store.save))
    assert [c["type"] for c in chunks_of(stream)] == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-end",
        "tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-delta",
        "tool-input-available", "tool-approval-request", "finish-step", "finish",
    ]  # fmt: skip
    chunks = chunks_of(stream)
    assert chunks[0] == {"type": "start", "messageId": "m1"}
    assert chunks[-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert chunks[10]["input"] == {"flight": "VX205"}
    assert travel.desk.bookings == 0


def test_the_response_headers_name_the_protocol() -> None:
    assert UI_MESSAGE_STREAM_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert UI_MESSAGE_STREAM_HEADERS["content-type"] == "text/event-stream"


def test_the_ai_package_reads_a_text_answer(tmp_path: Path) -> None:
    read = read_with_ai_package("".join(encode_ui_message_stream(Travel().turn("hello there"))), tmp_path)
    assert read["version"].startswith("6.")
    assert parts(read["message"]) == [("step-start", ""), ("text", "done")]
    assert read["message"]["parts"][1]["text"] == "You said hello there"


def test_the_ai_package_reads_reasoning_before_the_text(tmp_path: Path) -> None:
    stream = "".join(encode_ui_message_stream(with_reasoning(Travel().turn("hi"))))
    message = read_with_ai_package(stream, tmp_path)["message"]
    assert parts(message) == [("step-start", ""), ("reasoning", "done"), ("text", "done")]
    assert message["parts"][1]["text"] == "The user wants a greeting."


def test_the_ai_package_reads_a_tool_that_ran_and_the_next_step(tmp_path: Path) -> None:
    message = read_with_ai_package("".join(encode_ui_message_stream(Travel().turn("status of VX205"))), tmp_path)[
        "message"
    ]
    assert parts(message) == [
        ("step-start", ""), ("text", "done"), ("tool-flight_status", "output-available"),
        ("step-start", ""), ("text", "done"),
    ]  # fmt: skip
    assert message["parts"][2]["output"] == "VX205 is on time"
    assert message["parts"][4]["text"] == "I received: VX205 is on time"


def test_the_ai_package_reads_a_tool_that_failed(tmp_path: Path) -> None:
    message = read_with_ai_package("".join(encode_ui_message_stream(Travel().turn("cancel VX205"))), tmp_path)[
        "message"
    ]
    tool = message["parts"][2]
    assert (tool["type"], tool["state"]) == ("tool-cancel_flight", "output-error")
    assert "down" in tool["errorText"]


def test_a_denial_with_a_reason_continues_the_paused_message(tmp_path: Path) -> None:
    travel = Travel()
    first = read_with_ai_package(
        "".join(encode_ui_message_stream(travel.turn("book VX205"), message_id="m1", save=travel.store.save)),
        tmp_path,
    )["message"]
    tool = first["parts"][2]
    assert (tool["type"], tool["state"]) == ("tool-book_flight", "approval-requested")
    # what the SDK's addToolApprovalResponse leaves in the message it sends back
    answered = {**tool, "state": "approval-responded", "approval": {**tool["approval"], "approved": False,
                                                                    "reason": "take the train"}}  # fmt: skip
    prior = {**first, "parts": [*first["parts"][:2], answered]}
    resumed = travel.resume(tool["approval"]["id"], approved=False, reason="take the train")
    message = read_with_ai_package("".join(encode_ui_message_stream(resumed, message_id="m1")), tmp_path, prior)[
        "message"
    ]
    assert message["id"] == "m1"
    assert parts(message) == [
        ("step-start", ""), ("text", "done"), ("tool-book_flight", "output-denied"), ("step-start", ""),
        ("text", "done"),
    ]  # fmt: skip
    assert "take the train" in message["parts"][4]["text"]
    assert travel.desk.bookings == 0


def test_an_approval_runs_the_call_and_reports_its_output(tmp_path: Path) -> None:
    travel = Travel()
    first = read_with_ai_package(
        "".join(encode_ui_message_stream(travel.turn("book VX205"), message_id="m1", save=travel.store.save)),
        tmp_path,
    )["message"]
    tool = first["parts"][2]
    answered = {**tool, "state": "approval-responded", "approval": {**tool["approval"], "approved": True}}
    prior = {**first, "parts": [*first["parts"][:2], answered]}
    resumed = travel.resume(tool["approval"]["id"], approved=True)
    message = read_with_ai_package("".join(encode_ui_message_stream(resumed, message_id="m1")), tmp_path, prior)[
        "message"
    ]
    assert (message["parts"][2]["state"], message["parts"][2]["output"]) == ("output-available", "Booked VX205")
    assert travel.desk.bookings == 1


def test_a_failure_mid_turn_ends_with_an_error_that_hides_its_details(tmp_path: Path) -> None:
    stream = "".join(encode_ui_message_stream(failing(Travel().turn("hello there"), after=2)))
    read = read_with_ai_package(stream, tmp_path)
    assert read["errors"] == ["The turn failed (ConnectionError)."]
    assert "secret-host" not in stream
    assert read["message"]["parts"][1] == {"type": "text", "text": "You said", "state": "done"}


def test_without_a_store_the_approval_id_is_the_call_id() -> None:
    travel = Travel()
    paused = next(e for e in travel.turn("book VX205") if isinstance(e, TurnPaused))
    assert UIMessageStreamEncoder().encode(paused) == [
        {"type": "tool-approval-request", "approvalId": "call_book_flight", "toolCallId": "call_book_flight"}
    ]
