"""The Vercel AI SDK *UI message stream* (protocol ``v1``, as the ``ai`` package 5 and 6 read it).

A turn's typed events (``chatclient.events``) become the SDK's chunks: ``start``; per model round a
``start-step`` ... ``finish-step``; ``text-*`` and ``reasoning-*`` parts; ``tool-input-start`` /
``-delta`` / ``-available`` as a call streams in; ``tool-approval-request`` for each call a person must
decide; ``tool-output-available`` / ``-error`` / ``-denied`` for its result; ``finish``, or ``error``.
Each chunk is sent as one server-sent event, and the stream ends with ``data: [DONE]``.
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
from ..responses import FinishReason
from ..tools.confirmation import PendingToolCalls
from ._shared import SaveState, approval_id, aserve, awaiting, call_input, error_text, serve, sse

__all__ = [
    "DONE",
    "UI_MESSAGE_STREAM_HEADERS",
    "UIMessageStreamEncoder",
    "aencode_ui_message_stream",
    "encode_ui_message_stream",
    "sse",
]

Chunk = dict[str, Any]

UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""What a response carrying the stream sends: the SDK's client checks the protocol header."""

DONE = "data: [DONE]\n\n"
"""The last event of every stream (the SDK's own server ends with it; its reader ignores it)."""

_FINISH_REASONS = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool-calls",
    FinishReason.AWAITING_DECISION: "tool-calls",
    FinishReason.CONTENT_FILTER: "content-filter",
}


class UIMessageStreamEncoder:
    """Turns one turn's events into UI message stream chunks; keeps which parts are open.

    Pure: it only maps events to chunks. A paused turn's approval ids name the state the application
    saved (pass its ``state_id`` with the ``TurnPaused`` event), so the reply can resume it.
    """

    def __init__(self, message_id: str | None = None) -> None:
        self.message_id = message_id or f"msg-{uuid.uuid4().hex}"
        self._parts = 0
        self._text: str | None = None
        self._reasoning: str | None = None
        self._in_step = False
        self._round_over = False
        self._started_calls: set[str] = set()

    def start(self) -> list[Chunk]:
        return [{"type": "start", "messageId": self.message_id}]

    def encode(self, event: StreamEvent, *, state_id: str | None = None) -> list[Chunk]:
        """The chunks for ``event``; ``state_id`` is where a ``TurnPaused`` event's state was saved."""
        chunks: list[Chunk] = []
        if isinstance(event, TextDelta):
            if event.index == 0 and event.text:
                self._step(chunks)
                self._close_reasoning(chunks)
                if self._text is None:
                    self._text = self._new_id("text")
                    chunks.append({"type": "text-start", "id": self._text})
                chunks.append({"type": "text-delta", "id": self._text, "delta": event.text})
        elif isinstance(event, ReasoningDelta):
            if event.index == 0 and event.text:
                self._step(chunks)
                self._close_text(chunks)
                if self._reasoning is None:
                    self._reasoning = self._new_id("reasoning")
                    chunks.append({"type": "reasoning-start", "id": self._reasoning})
                chunks.append({"type": "reasoning-delta", "id": self._reasoning, "delta": event.text})
        else:
            self._encode_other(event, state_id, chunks)
        return chunks

    def _encode_other(self, event: StreamEvent, state_id: str | None, chunks: list[Chunk]) -> None:
        if isinstance(event, ToolCallStarted):
            self._step(chunks)
            self._close_open(chunks)
            self._started_calls.add(event.id)
            chunks.append({"type": "tool-input-start", "toolCallId": event.id, "toolName": event.name})
        elif isinstance(event, ToolCallDelta):
            if event.id in self._started_calls and event.arguments:
                chunks.append({"type": "tool-input-delta", "toolCallId": event.id, "inputTextDelta": event.arguments})
        elif isinstance(event, RoundFinished):
            self._close_open(chunks)
            self._round_over = True
        elif isinstance(event, ToolCallReady):
            self._close_open(chunks)
            call = event.call
            chunks.append(
                {"type": "tool-input-available", "toolCallId": call.id, "toolName": call.name,
                 "input": call_input(call.arguments)}
            )  # fmt: skip
        elif isinstance(event, ToolResultReady):
            chunks.append(_result(event))
        elif isinstance(event, TurnPaused):
            for paused in awaiting(event.pending.calls):
                ref = approval_id(state_id, paused.id) if state_id is not None else paused.id
                chunks.append({"type": "tool-approval-request", "approvalId": ref, "toolCallId": paused.id})
        elif isinstance(event, TurnFinished):
            self._close_open(chunks)
            if self._in_step:
                chunks.append({"type": "finish-step"})
                self._in_step = False
            chunks.append({"type": "finish", "finishReason": _finish_reason(event)})

    def fail(self, text: str) -> list[Chunk]:
        """The chunks that end a failed turn: open parts closed, then the error."""
        chunks: list[Chunk] = []
        self._close_open(chunks)
        chunks.append({"type": "error", "errorText": text})
        return chunks

    def _step(self, chunks: list[Chunk]) -> None:
        """A model round is a step: its first part opens it, and the next round's first part closes it
        (the round's tool calls and results belong to it)."""
        if self._round_over and self._in_step:
            chunks.append({"type": "finish-step"})
            self._in_step = False
        self._round_over = False
        if not self._in_step:
            chunks.append({"type": "start-step"})
            self._in_step = True

    def _new_id(self, kind: str) -> str:
        self._parts += 1
        return f"{kind}-{self._parts}"

    def _close_text(self, chunks: list[Chunk]) -> None:
        if self._text is not None:
            chunks.append({"type": "text-end", "id": self._text})
            self._text = None

    def _close_reasoning(self, chunks: list[Chunk]) -> None:
        if self._reasoning is not None:
            chunks.append({"type": "reasoning-end", "id": self._reasoning})
            self._reasoning = None

    def _close_open(self, chunks: list[Chunk]) -> None:
        self._close_reasoning(chunks)
        self._close_text(chunks)


def _result(event: ToolResultReady) -> Chunk:
    response = event.response
    if response.metadata.get("decision") == "deny":
        return {"type": "tool-output-denied", "toolCallId": response.id}
    if response.is_error:
        return {"type": "tool-output-error", "toolCallId": response.id, "errorText": response.response_data}
    return {"type": "tool-output-available", "toolCallId": response.id, "output": response.response_data}


def _finish_reason(event: TurnFinished) -> str:
    chat = event.response.chat_response
    result = chat.result if chat is not None else None
    reason = result.finish_reason if result is not None else None
    return _FINISH_REASONS.get(reason, "other") if reason is not None else "stop"


def encode_ui_message_stream(
    events: Iterable[StreamEvent],
    *,
    message_id: str | None = None,
    save: Callable[[PendingToolCalls], str] | None = None,
    on_error: Callable[[BaseException], str] = error_text,
) -> Iterator[str]:
    """A turn's events as the stream's server-sent events, ``DONE`` last.

    ``save`` keeps a paused turn's state (e.g. ``store.save``) and returns its id, which the approval
    ids carry. A failure while the turn runs ends the stream with an ``error`` chunk whose text is
    ``on_error(exception)``; the exception itself goes to the ``chatclient.ui`` log.
    """
    yield from serve(UIMessageStreamEncoder(message_id), events, save, on_error)
    yield DONE


async def aencode_ui_message_stream(
    events: AsyncIterable[StreamEvent],
    *,
    message_id: str | None = None,
    save: SaveState | None = None,
    on_error: Callable[[BaseException], str] = error_text,
) -> AsyncIterator[str]:
    """As :func:`encode_ui_message_stream`, for ``astream().events()``; ``save`` may be async."""
    async for item in aserve(UIMessageStreamEncoder(message_id), events, save, on_error):
        yield item
    yield DONE
