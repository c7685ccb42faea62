"""Bedrock ``ConverseStream`` events (decoded from the event-stream framing,
:mod:`._eventstream`) to model events (see ``ChatModel``'s contract).

The events, each named by its ``:event-type`` header: ``messageStart``; ``contentBlockStart`` (a
``toolUse`` block's id and name); ``contentBlockDelta`` (``text``, a ``toolUse`` input piece, or a
``reasoningContent`` piece: text, signature or redacted bytes); ``contentBlockStop``;
``messageStop`` (the stop reason); ``metadata`` (usage). An ``exception`` message (throttling, a
model stream error, ...) raises the matching ``ProviderError``.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pydantic_core
from pydantic import JsonValue

from chatclient.errors import MalformedResponseError, ProviderError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, CallIds
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation
from providers._errors import error_from_response

from ._errors import error_details
from ._eventstream import EventMessage, EventStreamDecoder
from ._mapping import (
    PROVIDER,
    REASONING_METADATA_KEY,
    generation_metadata,
    parse_usage,
    response_extra,
)

__all__ = ["EventStreamParser", "StreamParser", "exception_error"]

_EXCEPTION_STATUS = {
    "throttlingException": 429,
    "modelNotReadyException": 429,
    "serviceQuotaExceededException": 400,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelStreamErrorException": 500,
    "modelTimeoutException": 504,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
}
"""Each exception a stream can end with, as the HTTP status Bedrock gives it outside a stream."""


def exception_error(message: EventMessage, request_id: str | None = None) -> ProviderError:
    """The error of an ``exception`` message, classed as the HTTP error of that exception would be."""
    kind = str(message.headers.get(":exception-type", ""))
    headers = httpx2.Headers({"x-amzn-errortype": kind, **({"x-amzn-requestid": request_id} if request_id else {})})
    status = _EXCEPTION_STATUS.get(kind, 500)
    return error_from_response(PROVIDER, status, headers, message.payload, error_details)


class StreamParser:
    """Turns the messages of one streamed reply into model events, keeping state across them.

    Text goes out as ``TextDelta``; a ``toolUse`` block's start is the call's ``ToolCallStarted``
    (its own id from ``CallIds``, as in a call) and each input piece a ``ToolCallDelta`` under it,
    found through ``contentBlockIndex``. Reasoning text goes out as ``ReasoningDelta`` and is also
    collected with its signature (or redacted bytes) into the blocks that must be sent back, which
    ride in the message metadata of the chunk ``messageStop`` becomes; ``metadata`` gives a chunk
    with the usage. :meth:`finish` raises if ``messageStop`` never came.
    """

    __slots__ = ("_blocks", "_ids", "_meta", "_reasoning", "_request_id", "done")

    def __init__(self, request_id: str | None = None) -> None:
        self._request_id = request_id
        self._meta = ChatResponseMetadata(extra=response_extra(request_id))
        self._blocks: dict[int, dict[str, Any]] = {}
        self._ids = CallIds()
        self._reasoning: list[JsonValue] = []
        self.done = False

    def feed(self, message: EventMessage) -> list[ModelEvent]:
        kind = message.headers.get(":message-type")
        if kind == "exception":
            raise exception_error(message, self._request_id)
        if kind != "event":
            raise MalformedResponseError(f"A stream message of type {kind!r}", provider=PROVIDER)
        event = message.headers.get(":event-type")
        try:
            data = pydantic_core.from_json(message.payload)
            if not isinstance(data, dict):
                raise TypeError("the payload is not an object")
            if event == "contentBlockDelta":
                return self._delta(data)
            if event == "contentBlockStart":
                return self._start(data)
            if event == "contentBlockStop":
                self._stop(data)
                return []
            if event == "messageStart":
                return [ChatResponse((), self._meta)]
            if event == "messageStop":
                self.done = True
                return [self._message_stop(data)]
            if event == "metadata":
                usage = data.get("usage")
                return [ChatResponse((), self._meta.model_copy(update={"usage": parse_usage(usage)}))] if usage else []
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise MalformedResponseError(f"Unexpected {event!r} event: {exc!r}", provider=PROVIDER) from exc
        return []  # event types this client does not use

    def finish(self, saw_done: bool = False) -> None:
        if not self.done:
            raise StreamIncompleteError("The event stream ended before messageStop", provider=PROVIDER)

    def _start(self, data: dict[str, Any]) -> list[ModelEvent]:
        use = (data.get("start") or {}).get("toolUse")
        if not isinstance(use, dict):
            return []
        given = use.get("toolUseId")
        wire_id = given if isinstance(given, str) else ""
        name = use["name"]
        if not isinstance(name, str):
            raise TypeError("a toolUse's name is not a string")
        own = self._ids.assign(wire_id)
        self._blocks[data["contentBlockIndex"]] = {"type": "toolUse", "id": own}
        return [ToolCallStarted(own, name, wire_id=None if own == wire_id else wire_id)]

    def _delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta, index = data["delta"], data["contentBlockIndex"]
        if "text" in delta:
            text = delta["text"]
            if not isinstance(text, str):
                raise TypeError("a text delta is not a string")
            return [TextDelta(text)] if text else []
        if "toolUse" in delta:
            block = self._blocks.get(index)
            if block is None or block["type"] != "toolUse":
                raise MalformedResponseError(
                    f"A toolUse input piece for block {index!r}, which is no toolUse block", provider=PROVIDER
                )
            piece = delta["toolUse"]["input"]
            if not isinstance(piece, str):
                raise TypeError("a toolUse input piece is not a string")
            return [ToolCallDelta(block["id"], piece)] if piece else []
        if "reasoningContent" in delta:
            return self._reasoning_delta(index, delta["reasoningContent"])
        return []

    def _reasoning_delta(self, index: int, piece: dict[str, Any]) -> list[ModelEvent]:
        block = self._blocks.setdefault(index, {"type": "reasoning", "text": [], "signature": None, "redacted": []})
        if "text" in piece:
            block["text"].append(piece["text"])
            return [ReasoningDelta(piece["text"])] if piece["text"] else []
        if "signature" in piece:
            block["signature"] = piece["signature"]
        elif "redactedContent" in piece:
            block["redacted"].append(piece["redactedContent"])
        return []

    def _stop(self, data: dict[str, Any]) -> None:
        block = self._blocks.get(data["contentBlockIndex"])
        if block is None or block["type"] != "reasoning":
            return
        if block["redacted"]:
            self._reasoning.append({"reasoningContent": {"redactedContent": "".join(block["redacted"])}})
            return
        text: dict[str, JsonValue] = {"text": "".join(block["text"])}
        if block["signature"] is not None:
            text["signature"] = block["signature"]
        self._reasoning.append({"reasoningContent": {"reasoningText": text}})

    def _message_stop(self, data: dict[str, Any]) -> ChatResponse:
        metadata: dict[str, JsonValue] = {REASONING_METADATA_KEY: list(self._reasoning)} if self._reasoning else {}
        generation = Generation(AssistantMessage(None, metadata=metadata), generation_metadata(data.get("stopReason")))
        return ChatResponse((generation,), self._meta)


class EventStreamParser:
    """The body's raw chunks (the shell's ``bytes`` framing) to model events: the event-stream
    framing decoded (:class:`~._eventstream.EventStreamDecoder`), then each message parsed."""

    __slots__ = ("_frames", "_parser")

    def __init__(self, request_id: str | None = None) -> None:
        self._frames = EventStreamDecoder(PROVIDER)
        self._parser = StreamParser(request_id)

    def feed(self, chunk: bytes) -> list[ModelEvent]:
        return [event for message in self._frames.feed(chunk) for event in self._parser.feed(message)]

    def finish(self, saw_done: bool = False) -> None:
        self._frames.finish()
        self._parser.finish()
