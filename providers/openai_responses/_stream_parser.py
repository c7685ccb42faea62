"""Responses API streams: SSE events to model events (see ``ChatModel``'s contract).

Apart from :mod:`._mapping` because only a stream needs it and the stream events
(``chatclient.events``): importing the provider and a plain call load neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatclient.errors import MalformedResponseError, ServerError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation

from ._mapping import (
    _MODELLED_ITEMS,
    PROVIDER,
    _finish,
    _generation_meta,
    _Output,
    _response_metadata,
    _str,
    event_error,
    parse_usage,
)

__all__ = ["StreamParser"]


class StreamParser:
    """Turns ``(event, data)`` SSE events into model events, keeping state across events.

    ``response.created`` gives a ``ChatResponse`` chunk with the response id and model. Text (and
    refusal) deltas go out as ``TextDelta``; reasoning summary and reasoning text deltas as
    ``ReasoningDelta`` (for display: the reasoning items to send back arrive whole in
    ``response.output_item.done`` and go into the last chunk's message metadata). A function call's
    ``output_item.added`` is its ``ToolCallStarted`` under the ``call_id`` (our ``ToolCall.id``;
    replaced, as in a call, when repeated or missing); argument deltas, keyed by ``item_id`` (the
    ``fc_`` id) or ``output_index``, are ``ToolCallDelta`` under that id.
    ``response.completed`` gives the closing chunk; :meth:`finish` raises if it never came.
    """

    __slots__ = ("_args", "_by_index", "_by_item", "_handlers", "_meta", "_output", "_request_id", "done")

    def __init__(self, request_id: str | None = None) -> None:
        self._meta = ChatResponseMetadata()
        self._request_id = request_id
        self._by_item: dict[str, str] = {}
        self._by_index: dict[int, str] = {}
        self._args: dict[str, list[str]] = {}
        self._output = _Output()
        self.done = False
        """True once ``response.completed`` (or ``response.incomplete``) was seen."""
        self._handlers: dict[str, Callable[[dict[str, Any]], list[ModelEvent]]] = {
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.reasoning_summary_text.delta": self._reasoning_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.function_call_arguments.done": self._arguments_done,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.created": self._created,
            "response.in_progress": self._created,
            "response.completed": self._completed,
            "response.incomplete": self._completed,
            "response.failed": self._failed,
            "error": self._error,
        }

    def feed(self, event: tuple[str, Any]) -> list[ModelEvent]:
        name, data = event
        if not isinstance(data, dict):
            raise MalformedResponseError(f"A stream event is not an object: {data!r}", provider=PROVIDER)
        kind = data.get("type") or name
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        return handler(data) if handler is not None else []

    def _created(self, data: dict[str, Any]) -> list[ModelEvent]:
        response = data.get("response")
        if isinstance(response, dict):
            meta = ChatResponseMetadata(id=_str(response.get("id")), model=_str(response.get("model")))
            if meta != self._meta:  # ``in_progress`` repeats what ``created`` said
                self._meta = meta
                return [ChatResponse((), meta)]
        return []

    def _text_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError(f"A text delta without text: {data!r}", provider=PROVIDER)
        self._output.saw_message = True
        return [TextDelta(delta)] if delta else []

    def _refusal_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        """Collected for the closing chunk's metadata, not streamed as answer text."""
        delta = data.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError(f"A refusal delta without text: {data!r}", provider=PROVIDER)
        self._output.refusal.append(delta)
        return []

    def _reasoning_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        delta = data.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError(f"A reasoning delta without text: {data!r}", provider=PROVIDER)
        return [ReasoningDelta(delta)] if delta else []

    def _call_id(self, data: dict[str, Any]) -> str:
        item_id, index = data.get("item_id"), data.get("output_index")
        call_id = self._by_item.get(item_id) if isinstance(item_id, str) else None
        if call_id is None and isinstance(index, int):
            call_id = self._by_index.get(index)
        if call_id is None:
            raise MalformedResponseError(f"Arguments for an unknown function call: {data!r}", provider=PROVIDER)
        return call_id

    def _arguments_delta(self, data: dict[str, Any]) -> list[ModelEvent]:
        call_id = self._call_id(data)
        delta = data.get("delta")
        if not isinstance(delta, str):
            raise MalformedResponseError(f"An arguments delta without text: {data!r}", provider=PROVIDER)
        self._args[call_id].append(delta)
        return [ToolCallDelta(call_id, delta)] if delta else []

    def _arguments_done(self, data: dict[str, Any]) -> list[ModelEvent]:
        """Sends whatever the deltas missed (nothing, normally)."""
        call_id = self._call_id(data)
        full = data.get("arguments")
        sent = "".join(self._args[call_id])
        if isinstance(full, str) and len(full) > len(sent) and full.startswith(sent):
            rest = full[len(sent) :]
            self._args[call_id].append(rest)
            return [ToolCallDelta(call_id, rest)]
        return []

    def _start_call(self, item: dict[str, Any], output_index: Any) -> list[ModelEvent]:
        call = self._output.add_call(item)
        if isinstance(item_id := item.get("id"), str):
            self._by_item[item_id] = call.id
        if isinstance(output_index, int):
            self._by_index[output_index] = call.id
        self._args[call.id] = [call.arguments]
        started: list[ModelEvent] = [ToolCallStarted(call.id, call.name, 0, call.type, call.wire_id)]
        if call.arguments:
            started.append(ToolCallDelta(call.id, call.arguments))
        return started

    def _item_added(self, data: dict[str, Any]) -> list[ModelEvent]:
        item = data.get("item")
        if not isinstance(item, dict):
            raise MalformedResponseError(f"output_item.added without an item: {data!r}", provider=PROVIDER)
        if item.get("type") == "function_call":
            return self._start_call(item, data.get("output_index"))
        return []

    def _item_done(self, data: dict[str, Any]) -> list[ModelEvent]:
        item = data.get("item")
        if not isinstance(item, dict):
            raise MalformedResponseError(f"output_item.done without an item: {data!r}", provider=PROVIDER)
        kind = item.get("type")
        if kind == "reasoning":
            self._output.reasoning.append(item)
        elif kind not in _MODELLED_ITEMS:
            self._output.builtin.append(item)
        elif kind == "function_call" and not self._started(item, data.get("output_index")):
            return self._start_call(item, data.get("output_index"))
        return []

    def _started(self, item: dict[str, Any], output_index: Any) -> bool:
        """Whether this output item's call was started (by its ``fc_`` id or position, not its
        ``call_id``, which two calls may share)."""
        item_id = item.get("id")
        if isinstance(item_id, str) and item_id in self._by_item:
            return True
        return isinstance(output_index, int) and output_index in self._by_index

    def _completed(self, data: dict[str, Any]) -> list[ModelEvent]:
        response = data.get("response")
        if not isinstance(response, dict):
            raise MalformedResponseError(f"{data.get('type')} without a response: {data!r}", provider=PROVIDER)
        self.done = True
        output = self._output
        reason, raw = _finish(response.get("status"), response.get("incomplete_details"), bool(output.calls))
        # The text came as deltas; ``""`` says a message was there (an empty one), as a call says it.
        message = AssistantMessage("" if output.text() is not None else None, metadata=output.metadata())
        metadata = _response_metadata(response, parse_usage(response.get("usage")), self._request_id)
        return [ChatResponse((Generation(message, _generation_meta(reason, raw, bool(output.refusal))),), metadata)]

    def _failed(self, data: dict[str, Any]) -> list[ModelEvent]:
        response = data.get("response")
        raise event_error(response.get("error") if isinstance(response, dict) else None, default=ServerError)

    def _error(self, data: dict[str, Any]) -> list[ModelEvent]:
        raise event_error(data)

    def finish(self, saw_done: bool = False) -> None:
        """Call when the stream ended: a stream cut before its last event is an error, not a reply."""
        if not self.done:
            raise StreamIncompleteError("The stream ended before response.completed", provider=PROVIDER)
