"""Gemini streams (``streamGenerateContent?alt=sse``): SSE chunks to model events.

Apart from :mod:`._mapping` because only a stream needs it and the stream events
(``chatclient.events``): importing the provider and a plain call load neither.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, CallIds
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation, GenerationMetadata

from ._mapping import (
    PARTS_METADATA_KEY,
    PROVIDER,
    blocked_reason,
    candidate_of,
    finish_reason,
    function_call,
    generation_extra,
    join_part,
    needs_keeping,
    parse_usage,
    parts_of,
    stream_error,
)

__all__ = ["StreamParser"]


class StreamParser:
    """Turns the chunks of one streamed reply into model events, keeping state across chunks.

    Every chunk is a whole ``GenerateContentResponse`` holding the parts generated since the last one:
    text goes out as ``TextDelta``, thought text as ``ReasoningDelta``; a ``functionCall`` arrives
    whole, so it is a ``ToolCallStarted`` (with the id ``CallIds`` gives it, as in a call) and one
    ``ToolCallDelta`` with all its arguments. The parts are also collected, joined as
    :func:`~._mapping.join_part` joins them, so the closing chunk's message metadata keeps the same
    parts (thoughts and signatures) a call would. The chunk with ``finishReason`` is the closing
    chunk, with its usage (cumulative, like every chunk's); a later chunk with usage only updates it.
    There is no terminal event: :meth:`finish` raises if no ``finishReason`` came.
    """

    __slots__ = ("_calls", "_ids", "_meta", "_parts", "_run", "_run_thought", "done")

    def __init__(self) -> None:
        self._meta: ChatResponseMetadata | None = None
        self._ids = CallIds()
        self._parts: list[dict[str, Any]] = []
        self._run: list[str] = []
        """The text pieces of the unsigned text part being streamed (joined when another part comes)."""
        self._run_thought = False
        self._calls = 0
        self.done = False
        """True once a chunk with ``finishReason`` (or a blocked prompt's feedback) was seen."""

    def feed(self, event: tuple[str, Any]) -> list[ModelEvent]:
        data = event[1]
        if not isinstance(data, dict):
            raise MalformedResponseError("A stream chunk is not an object", provider=PROVIDER, body=data)
        if "error" in data:
            raise stream_error(data)
        try:
            return self._chunk(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise MalformedResponseError(f"Unexpected stream chunk: {exc!r}", provider=PROVIDER, body=data) from exc

    def finish(self, saw_done: bool = False) -> None:
        """Call when the body ended: a stream cut before its ``finishReason`` is an error, not a reply."""
        if not self.done:
            raise StreamIncompleteError("The stream ended before a chunk with finishReason", provider=PROVIDER)

    def _chunk(self, data: dict[str, Any]) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        if self._meta is None:
            reply_id, model = data.get("responseId"), data.get("modelVersion")
            self._meta = ChatResponseMetadata(
                id=reply_id if isinstance(reply_id, str) else None, model=model if isinstance(model, str) else None
            )
            events.append(ChatResponse((), self._meta))
        candidate = candidate_of(data)
        if candidate is not None:
            for part in parts_of(candidate, data):
                text = part.get("text")
                if type(text) is str and (len(part) == 1 or (len(part) == 2 and "thought" in part)):
                    self._text_piece(text, bool(part.get("thought")), events)  # most chunks: one text piece
                else:
                    events.extend(self._part(part, data))
        raw = blocked_reason(candidate, data)
        usage = data.get("usageMetadata")
        if raw is not None and not self.done:
            self.done = True
            events.append(self._closing(raw, candidate, data, usage))
        elif self.done and isinstance(usage, dict):
            events.append(ChatResponse((), self._meta.model_copy(update={"usage": parse_usage(usage)})))
        return events

    def _text_piece(self, text: str, thought: bool, events: list[ModelEvent]) -> None:
        if self._run and self._run_thought is not thought:
            self._flush()
        self._run.append(text)
        self._run_thought = thought
        if text:
            events.append(ReasoningDelta(text) if thought else TextDelta(text))

    def _flush(self) -> None:
        """The streamed text part, joined, as the parts a whole reply has (see ``join_part``)."""
        if self._run:
            part: dict[str, Any] = {"text": "".join(self._run)}
            if self._run_thought:
                part["thought"] = True
            join_part(self._parts, part)
            self._run = []

    def _part(self, part: dict[str, Any], data: dict[str, Any]) -> list[ModelEvent]:
        self._flush()
        join_part(self._parts, part)
        if "functionCall" in part:
            wire_id, name, arguments = function_call(part, data)
            own = self._ids.assign(wire_id)
            self._calls += 1
            started = ToolCallStarted(own, name, wire_id=None if own == wire_id else wire_id)
            return [started, ToolCallDelta(own, arguments)]
        text = part.get("text")
        if isinstance(text, str) and text:
            return [ReasoningDelta(text) if part.get("thought") else TextDelta(text)]
        return []

    def _closing(self, raw: str, candidate: Any, data: dict[str, Any], usage: Any) -> ChatResponse:
        self._flush()
        metadata: dict[str, JsonValue] = {}
        if needs_keeping(self._parts):
            metadata[PARTS_METADATA_KEY] = list(self._parts)
        generation = Generation(
            AssistantMessage(None, metadata=metadata),
            GenerationMetadata(
                finish_reason=finish_reason(raw, self._calls > 0), extra=generation_extra(candidate, data)
            ),
        )
        assert self._meta is not None
        update = {"usage": parse_usage(usage)} if isinstance(usage, dict) else {}
        return ChatResponse((generation,), self._meta.model_copy(update=update))
