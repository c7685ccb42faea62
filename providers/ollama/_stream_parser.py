"""Ollama ``/api/chat`` streams: NDJSON lines to model events (see ``ChatModel``'s contract).

Apart from :mod:`._mapping` because only a stream needs it and the stream events
(``chatclient.events``): importing the provider and a plain call load neither.
"""

from __future__ import annotations

from typing import Any

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, CallIds
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation

from ._mapping import (
    PROVIDER,
    _generation_metadata,
    _response_metadata,
    _str_field,
    _thinking_metadata,
    _tool_calls,
    stream_error,
)

__all__ = ["StreamParser"]


class StreamParser:
    """Turns the NDJSON lines of one streamed reply into model events.

    The first line's model goes out as a ``ChatResponse`` chunk. Text pieces go out at once as
    ``TextDelta``, thinking pieces as ``ReasoningDelta`` (and collected: the reply's thinking is also
    message metadata, as in a complete reply). Ollama sends each tool call whole, in one line: it
    becomes a ``ToolCallStarted`` and one ``ToolCallDelta`` with all its arguments, under an id of its
    own (``CallIds``: a repeated or missing id is replaced, as in a call). The ``done: true``
    line yields a last chunk with the finish reason, usage and the thinking; :meth:`close` raises if
    it never came.
    """

    __slots__ = ("_calls", "_ids", "_started", "_thinking", "done")

    def __init__(self) -> None:
        self._calls = 0
        self._ids = CallIds()
        """Gives each call its own id, as a whole reply's calls get theirs (one line may hold several)."""
        self._thinking: list[str] = []
        self._started = False
        self.done = False

    def feed(self, event: Any) -> list[ModelEvent]:
        if not isinstance(event, dict):
            raise MalformedResponseError(f"Expected a JSON object line, got {event!r:.200}", provider=PROVIDER)
        if "error" in event:
            raise stream_error(event)
        events: list[ModelEvent] = []
        if not self._started:
            self._started = True
            model = event.get("model")
            events.append(ChatResponse((), ChatResponseMetadata(model=model if isinstance(model, str) else None)))
        message = event.get("message")
        if message is not None:
            if not isinstance(message, dict):
                raise MalformedResponseError("A stream line's message is not an object", provider=PROVIDER)
            thinking = _str_field(message, "thinking")
            if thinking:
                self._thinking.append(thinking)
                events.append(ReasoningDelta(thinking))
            content = _str_field(message, "content")
            if content:
                events.append(TextDelta(content))
            calls = _tool_calls(message.get("tool_calls"))
            self._calls += len(calls)
            for call in calls:
                own = self._ids.assign(call.id)
                events.append(ToolCallStarted(own, call.name, 0, call.type, None if own == call.id else call.id))
                events.append(ToolCallDelta(own, call.arguments))
        if event.get("done") is True:
            self.done = True
            closing = AssistantMessage(
                None if self._calls else "", metadata=_thinking_metadata("".join(self._thinking))
            )
            generation = Generation(closing, _generation_metadata(event.get("done_reason"), self._calls > 0))
            events.append(ChatResponse((generation,), _response_metadata(event)))
        return events

    def close(self) -> None:
        """Called when the body ended: a stream cut before its ``done`` line is an error, not a reply."""
        if not self.done:
            raise StreamIncompleteError("The stream ended before its final line (done: true)", provider=PROVIDER)

    def finish(self, saw_done: bool = False) -> None:
        """The shell's name for :meth:`close` (an NDJSON stream has no ``[DONE]``)."""
        self.close()
