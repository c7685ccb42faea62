"""The AG-UI encoder, checked against the ``ag-ui-protocol`` package's models and the protocol's order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chatclient.ui import encode_agui, parse_approval_id

from .scenarios import Travel, failing, with_reasoning

ag_ui = pytest.importorskip("ag_ui.core", reason="ag-ui-protocol is a dev dependency")


def events_of(stream: str) -> list[dict[str, Any]]:
    blocks = stream.split("\n\n")
    assert blocks[-1] == ""
    assert all(block.startswith("data: ") for block in blocks[:-1]), blocks
    return [json.loads(block[len("data: ") :]) for block in blocks[:-1]]


def validated(events: list[dict[str, Any]]) -> list[Any]:
    """Each event through the package's models: known type, required fields, no field it does not
    define, and the same JSON back."""
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(ag_ui.Event)
    models = []
    for event in events:
        model = adapter.validate_python(event)
        assert not model.model_extra, f"{event['type']} has fields AG-UI does not define: {model.model_extra}"
        assert json.loads(model.model_dump_json(by_alias=True)) == event
        models.append(model)
    return models


def in_protocol_order(events: list[dict[str, Any]]) -> None:
    """The order rules of the protocol: one run, closed last; content only inside its open message or
    call; nothing left open at the end."""
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    assert all(e["type"] not in ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR") for e in events[1:-1])
    texts: set[str] = set()
    reasoning: set[str] = set()
    calls: set[str] = set()
    for e in events[1:-1]:
        kind = e["type"]
        if kind == "TEXT_MESSAGE_START":
            assert e["messageId"] not in texts
            texts.add(e["messageId"])
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert e["messageId"] in texts, e
            if kind == "TEXT_MESSAGE_END":
                texts.remove(e["messageId"])
            else:
                assert e["delta"]
        elif kind == "REASONING_MESSAGE_START":
            reasoning.add(e["messageId"])
        elif kind in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            assert e["messageId"] in reasoning, e
            if kind == "REASONING_MESSAGE_END":
                reasoning.remove(e["messageId"])
        elif kind == "TOOL_CALL_START":
            assert e["toolCallId"] not in calls
            calls.add(e["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert e["toolCallId"] in calls, e
            if kind == "TOOL_CALL_END":
                calls.remove(e["toolCallId"])
    assert not texts and not reasoning and not calls, "left open at the end of the run"


def run(events: Iterator[Any], travel: Travel | None = None) -> list[dict[str, Any]]:
    save = travel.store.save if travel is not None else None
    encoded = events_of("".join(encode_agui(events, thread_id="thread-1", run_id="run-1", save=save)))
    validated(encoded)
    in_protocol_order(encoded)
    return encoded


def test_a_text_answer_is_one_message_in_one_run() -> None:
    events = run(Travel().turn("hello there"))
    assert [e["type"] for e in events] == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert "".join(e.get("delta", "") for e in events) == "You said hello there"
    assert events[-1] == {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1"}


def test_reasoning_is_its_own_message() -> None:
    events = run(with_reasoning(Travel().turn("hi")))
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["RUN_STARTED", "REASONING_START", "REASONING_MESSAGE_START"]
    assert kinds.index("REASONING_END") < kinds.index("TEXT_MESSAGE_START")


def test_a_tool_that_ran_streams_its_call_and_its_result_then_the_next_message() -> None:
    events = run(Travel().turn("status of VX205"))
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "flight_status"
    assert json.loads(args) == {"flight": "VX205"}
    assert result["toolCallId"] == start["toolCallId"]
    assert (result["content"], result["role"]) == ("VX205 is on time", "tool")
    messages = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert len(messages) == 2 and messages[0] == start["parentMessageId"]  # one assistant message per round


def test_a_pause_ends_the_run_with_an_interrupt_per_call_to_decide() -> None:
    travel = Travel()
    events = run(travel.turn("book VX205"), travel)
    finished = events[-1]
    outcome = finished["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["toolCallId"] == "call_book_flight"
    assert interrupt["responseSchema"]["required"] == ["approved"]
    state_id, call_id = parse_approval_id(interrupt["id"])
    assert travel.store.peek(state_id).awaiting_ids == [call_id]
    assert not any(e["type"] == "TOOL_CALL_RESULT" for e in events)
    assert travel.desk.bookings == 0


def test_a_resumed_run_reports_the_decided_call_then_answers() -> None:
    travel = Travel()
    interrupt = run(travel.turn("book VX205"), travel)[-1]["outcome"]["interrupts"][0]
    events = run(travel.resume(interrupt["id"], approved=False, reason="too expensive"))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert "too expensive" in result["content"]
    assert "too expensive" in "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert travel.desk.bookings == 0


def test_a_failure_ends_the_run_with_run_error_and_closes_what_was_open() -> None:
    events = run(failing(Travel().turn("hello there"), after=2))
    assert events[-2]["type"] == "TEXT_MESSAGE_END"
    assert events[-1] == {"type": "RUN_ERROR", "message": "The turn failed (ConnectionError)."}
