"""AG-UI events (protocol 1.0, as the ``ag-ui-protocol`` package's models define them).

A turn is a run: ``RUN_STARTED``; per model round a ``TEXT_MESSAGE_*`` (and ``REASONING_*``) message
and its ``TOOL_CALL_START`` / ``_ARGS`` / ``_END``; ``TOOL_CALL_RESULT`` for each result; then
``RUN_FINISHED``, or ``RUN_ERROR``. A turn that pauses for a person ends its run with
``RUN_FINISHED`` and an ``interrupt`` outcome: one interrupt per call to decide (``reason``
``"tool_approval"``, the call's ``toolCallId``, and a ``responseSchema`` for ``{approved, reason}``).
The next run answers them in ``RunAgentInput.resume`` (see ``chatclient.ui.starlette``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

from ..events import (
    ReasoningDelta,
    RoundFinished,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolResultReady,
    TurnFinished,
    TurnPaused,
)
from ..tools.confirmation import PendingCall, PendingToolCalls
from ._shared import SaveState, approval_id, aserve, awaiting, error_text, serve, sse

__all__ = ["APPROVAL_RESPONSE_SCHEMA", "AGUIEncoder", "aencode_agui", "encode_agui", "sse"]

Event = dict[str, Any]

APPROVAL_RESPONSE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}
"""The answer a tool-approval interrupt expects in its resume entry's ``payload``."""


class AGUIEncoder:
    """Turns one turn's events into AG-UI events (camelCase JSON objects); keeps what is open.

    Pure: it only maps events. Interrupt ids name the state the application saved (pass its
    ``state_id`` with the ``TurnPaused`` event), so the next run's resume entries can resume it.
    """

    def __init__(self, thread_id: str, run_id: str | None = None) -> None:
        self.thread_id = thread_id
        self.run_id = run_id or f"run-{uuid.uuid4().hex}"
        self._round = 0
        self._message: str | None = None
        self._text_open = False
        self._reasoning_open = False
        self._open_calls: list[str] = []
        self._interrupts: list[Event] = []
        self._round_over = False

    def start(self) -> list[Event]:
        return [{"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id}]

    def encode(self, event: StreamEvent, *, state_id: str | None = None) -> list[Event]:
        """The events for ``event``; ``state_id`` is where a ``TurnPaused`` event's state was saved."""
        out: list[Event] = []
        if isinstance(event, TextDelta):
            if event.index == 0 and event.text:
                self._new_output()
                self._close_reasoning(out)
                if not self._text_open:
                    self._text_open = True
                    out.append({"type": "TEXT_MESSAGE_START", "messageId": self._message_id(), "role": "assistant"})
                out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self._message_id(), "delta": event.text})
        elif isinstance(event, ReasoningDelta):
            if event.index == 0 and event.text:
                self._new_output()
                self._close_text(out)
                reasoning = f"{self._message_id()}-reasoning"
                if not self._reasoning_open:
                    self._reasoning_open = True
                    out.append({"type": "REASONING_START", "messageId": reasoning})
                    out.append({"type": "REASONING_MESSAGE_START", "messageId": reasoning, "role": "reasoning"})
                out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": reasoning, "delta": event.text})
        else:
            self._encode_other(event, state_id, out)
        return out

    def _encode_other(self, event: StreamEvent, state_id: str | None, out: list[Event]) -> None:
        if isinstance(event, ToolCallStarted):
            self._new_output()
            self._close_message(out)
            self._open_calls.append(event.id)
            out.append(
                {"type": "TOOL_CALL_START", "toolCallId": event.id, "toolCallName": event.name,
                 "parentMessageId": self._message_id()}
            )  # fmt: skip
        elif isinstance(event, ToolCallDelta):
            if event.id in self._open_calls and event.arguments:
                out.append({"type": "TOOL_CALL_ARGS", "toolCallId": event.id, "delta": event.arguments})
        elif isinstance(event, RoundFinished):
            self._close_message(out)
            self._round_over = True
        elif isinstance(event, ToolCallReady):
            self._ready(event, out)
        elif isinstance(event, ToolResultReady):
            response = event.response
            out.append(
                {"type": "TOOL_CALL_RESULT", "messageId": f"{self.run_id}-result-{response.id}",
                 "toolCallId": response.id, "content": response.response_data, "role": "tool"}
            )  # fmt: skip
        elif isinstance(event, TurnPaused):
            self._interrupts.extend(_interrupt(event.pending, call, state_id) for call in awaiting(event.pending.calls))
        elif isinstance(event, TurnFinished):
            self._close_message(out)
            self._close_calls(out)
            finished: Event = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id}
            if self._interrupts:
                finished["outcome"] = {"type": "interrupt", "interrupts": self._interrupts}
            out.append(finished)

    def fail(self, message: str) -> list[Event]:
        """The events that end a failed run: what is open is closed, then ``RUN_ERROR``."""
        out: list[Event] = []
        self._close_message(out)
        self._close_calls(out)
        out.append({"type": "RUN_ERROR", "message": message})
        return out

    def _ready(self, event: ToolCallReady, out: list[Event]) -> None:
        """A complete call: started and streamed before (then ended here), or whole at once."""
        call = event.call
        if call.id not in self._open_calls:
            self._close_message(out)
            out.append(
                {"type": "TOOL_CALL_START", "toolCallId": call.id, "toolCallName": call.name,
                 "parentMessageId": self._message_id()}
            )  # fmt: skip
            if call.arguments:
                out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": call.arguments})
        else:
            self._open_calls.remove(call.id)
        out.append({"type": "TOOL_CALL_END", "toolCallId": call.id})

    def _new_output(self) -> None:
        """The model speaks again after a finished round: that is a new assistant message."""
        if self._round_over:
            self._round_over = False
            self._message = None

    def _message_id(self) -> str:
        if self._message is None:
            self._round += 1
            self._message = f"{self.run_id}-{self._round}"
        return self._message

    def _close_text(self, out: list[Event]) -> None:
        if self._text_open:
            out.append({"type": "TEXT_MESSAGE_END", "messageId": self._message_id()})
            self._text_open = False

    def _close_reasoning(self, out: list[Event]) -> None:
        if self._reasoning_open:
            reasoning = f"{self._message_id()}-reasoning"
            out.append({"type": "REASONING_MESSAGE_END", "messageId": reasoning})
            out.append({"type": "REASONING_END", "messageId": reasoning})
            self._reasoning_open = False

    def _close_message(self, out: list[Event]) -> None:
        self._close_reasoning(out)
        self._close_text(out)

    def _close_calls(self, out: list[Event]) -> None:
        out.extend({"type": "TOOL_CALL_END", "toolCallId": call_id} for call_id in self._open_calls)
        self._open_calls.clear()


def _interrupt(pending: PendingToolCalls, call: PendingCall, state_id: str | None) -> Event:
    interrupt: Event = {
        "id": approval_id(state_id, call.id) if state_id is not None else call.id,
        "reason": "tool_approval",
        "message": f"Allow {call.name}({call.arguments})?",
        "toolCallId": call.id,
        "responseSchema": dict(APPROVAL_RESPONSE_SCHEMA),
    }
    if pending.expires_at is not None:
        from datetime import datetime, timezone

        interrupt["expiresAt"] = datetime.fromtimestamp(pending.expires_at, timezone.utc).isoformat()
    return interrupt


def encode_agui(
    events: Iterable[StreamEvent],
    *,
    thread_id: str,
    run_id: str | None = None,
    save: Callable[[PendingToolCalls], str] | None = None,
    on_error: Callable[[BaseException], str] = error_text,
) -> Iterator[str]:
    """A turn's events as AG-UI server-sent events. ``save`` keeps a paused turn's state (e.g.
    ``store.save``) and returns its id, which the interrupt ids carry. A failure while the turn runs
    ends the run with ``RUN_ERROR`` (``on_error(exception)``); the details go to the log."""
    return serve(AGUIEncoder(thread_id, run_id), events, save, on_error)


def aencode_agui(
    events: AsyncIterable[StreamEvent],
    *,
    thread_id: str,
    run_id: str | None = None,
    save: SaveState | None = None,
    on_error: Callable[[BaseException], str] = error_text,
) -> AsyncIterator[str]:
    """As :func:`encode_agui`, for ``astream().events()``; ``save`` may be async."""
    return aserve(AGUIEncoder(thread_id, run_id), events, save, on_error)
