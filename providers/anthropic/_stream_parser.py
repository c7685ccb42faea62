"""Anthropic Messages streams: SSE events to model events (see ``ChatModel``'s contract).

Apart from :mod:`._mapping` because only a stream needs it and the stream events
(``chatclient.events``): importing the provider and a plain call load neither.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import JsonValue

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, CallIds
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation, GenerationMetadata

from ._mapping import (
    _MODELLED_BLOCKS,
    PROVIDER,
    _blocks_metadata,
    _generation_extra,
    _response_extra,
    call_id,
    finish_reason,
    parse_usage,
    stream_error,
)

__all__ = ["StreamParser"]


def _tool_arguments(text: str, data: Any) -> Any:
    """The input a server tool's ``input_json_delta`` pieces add up to."""
    try:
        return pydantic_core.from_json(text)
    except ValueError as exc:
        raise MalformedResponseError(
            f"A server tool's input is not JSON: {text[:200]!r}", provider=PROVIDER, body=data
        ) from exc


class StreamParser:
    """Turns the SSE events of one streamed reply into model events, keeping state across events.

    ``message_start`` gives a ``ChatResponse`` chunk with the message id and model. Text deltas go out
    as ``TextDelta``, as they arrive. ``content_block_start`` of a ``tool_use`` block is the call's
    ``ToolCallStarted`` (id and name); each ``input_json_delta`` piece then goes out as a
    ``ToolCallDelta`` under that id, found through the block ``index`` (which counts every block of
    the message). Each call gets its own id as its block starts (``CallIds``, as in a call).
    Thinking text goes out as ``ReasoningDelta`` and is also collected: the signed
    thinking blocks (and redacted ones), which must be sent back as they were, ride in the message
    metadata of the closing chunk. ``message_delta`` carries the stop reason and the cumulative
    usage: it becomes that closing chunk. ``ping`` and unknown events are ignored; ``event: error``
    raises the matching ``ProviderError``; :meth:`finish` raises if ``message_stop`` never came.
    """

    __slots__ = (
        "_blocks",
        "_ids",
        "_meta",
        "_request_id",
        "_server_blocks",
        "_thinking",
        "_usage",
        "done",
    )

    def __init__(self, request_id: str | None = None) -> None:
        self._request_id = request_id
        self._meta = ChatResponseMetadata(extra=_response_extra(request_id))
        self._blocks: dict[int, dict[str, Any]] = {}
        """Block index → {"type", and "id" for tool_use, or the parts of a thinking block}."""
        self._ids = CallIds()
        """Gives each call its own id as its block starts (a repeated or missing id is replaced)."""
        self._thinking: list[JsonValue] = []
        self._server_blocks: list[JsonValue] = []
        self._usage: dict[str, Any] = {}
        self.done = False
        """True once ``message_stop`` was seen."""

    def feed(self, event: tuple[str, Any]) -> list[ModelEvent]:
        data = event[1]
        if not isinstance(data, dict):
            raise MalformedResponseError(f"Stream event {event[0]!r} is not an object", provider=PROVIDER, body=data)
        kind = data.get("type") or event[0]
        try:
            if kind == "content_block_delta":
                return self._delta(data)
            if kind == "content_block_start":
                return self._start(data)
            if kind == "content_block_stop":
                self._stop(data)
                return []
            if kind == "message_start":
                return [self._message_start(data)]
            if kind == "message_delta":
                return [self._message_delta(data)]
            if kind == "message_stop":
                self.done = True
                return []
            if kind == "error":
                raise stream_error(data, self._request_id)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:  # ValueError: pydantic's ValidationError
            raise MalformedResponseError(f"Unexpected {kind!r} event: {exc!r}", provider=PROVIDER, body=data) from exc
        return []  # ping and event types this client does not use

    def finish(self, saw_done: bool = False) -> None:
        """Call when the body ended: a stream cut before ``message_stop`` is an error, not a reply."""
        if not self.done:
            raise StreamIncompleteError("The event stream ended before message_stop", provider=PROVIDER)

    def _message_start(self, data: dict[str, Any]) -> ChatResponse:
        message = data["message"]
        self._usage = dict(message.get("usage") or {})
        self._meta = ChatResponseMetadata(
            id=message.get("id"), model=message.get("model"), extra=_response_extra(self._request_id)
        )
        return ChatResponse((), self._meta)

    def _start(self, data: dict[str, Any]) -> list[ModelEvent]:
        index = data["index"]
        block = data["content_block"]
        kind = block["type"]
        if kind == "text":
            self._blocks[index] = {"type": "text"}
            text = block.get("text")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "tool_use":
            wire_id, name = call_id(block, data), block["name"]
            if not isinstance(name, str):
                raise TypeError("tool_use name is not a string")
            own = self._ids.assign(wire_id)
            self._blocks[index] = {"type": "tool_use", "id": own}
            return [ToolCallStarted(own, name, wire_id=None if own == wire_id else wire_id)]
        if kind == "thinking":
            text = block.get("thinking") or ""
            self._blocks[index] = {"type": "thinking", "thinking": [text], "signature": ""}
            return [ReasoningDelta(text)] if isinstance(text, str) and text else []
        if kind == "redacted_thinking":
            self._thinking.append(block)
        elif kind not in _MODELLED_BLOCKS:
            # A server tool's block: its input may follow as input_json_delta pieces.
            self._blocks[index] = {"type": "server", "block": dict(block), "json": []}
        return []

    def _delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data["delta"]
        kind = delta["type"]
        if kind == "text_delta":
            text = delta["text"]
            if not isinstance(text, str):
                raise TypeError("text_delta text is not a string")
            return [TextDelta(text)] if text else []
        if kind == "input_json_delta":
            block = self._blocks.get(data["index"])
            if block is not None and block["type"] == "server":
                block["json"].append(delta["partial_json"])
                return []
            if block is None or block["type"] != "tool_use":
                raise MalformedResponseError(
                    f"input_json_delta for block {data['index']!r}, which is not a tool_use block",
                    provider=PROVIDER,
                    body=data,
                )
            piece = delta["partial_json"]
            if not isinstance(piece, str):
                raise TypeError("partial_json is not a string")
            return [ToolCallDelta(block["id"], piece)] if piece else []  # the first piece is always ""
        if kind == "thinking_delta":
            text = delta["thinking"]
            self._blocks[data["index"]]["thinking"].append(text)
            return [ReasoningDelta(text)] if isinstance(text, str) and text else []
        if kind == "signature_delta":
            self._blocks[data["index"]]["signature"] = delta["signature"]
        return []  # citations and other deltas are not part of the chat model

    def _stop(self, data: dict[str, Any]) -> None:
        block = self._blocks.get(data["index"])
        if block is not None and block["type"] == "thinking":
            self._thinking.append(
                {"type": "thinking", "thinking": "".join(block["thinking"]), "signature": block["signature"]}
            )
        elif block is not None and block["type"] == "server":
            server_block = block["block"]
            if block["json"]:
                server_block["input"] = _tool_arguments("".join(block["json"]), data)
            self._server_blocks.append(server_block)

    def _message_delta(self, data: dict[str, Any]) -> ChatResponse:
        delta = data.get("delta") or {}
        usage = data.get("usage")
        if isinstance(usage, dict):
            # Cumulative; older API versions sent only output_tokens here, so merge over message_start's.
            self._usage.update((k, v) for k, v in usage.items() if v is not None)
        raw_reason = delta.get("stop_reason")
        metadata = _blocks_metadata(list(self._thinking), list(self._server_blocks))
        generation = Generation(
            AssistantMessage(None, metadata=metadata),
            GenerationMetadata(
                finish_reason=finish_reason(raw_reason if isinstance(raw_reason, str) else None),
                extra=_generation_extra(raw_reason, delta.get("stop_sequence")),
            ),
        )
        return ChatResponse((generation,), self._meta.model_copy(update={"usage": parse_usage(self._usage)}))
