"""Chat Completions streams: ``data:`` events to model events (see ``ChatModel``'s contract).

Apart from :mod:`._mapping` because only a stream needs it and the stream events
(``chatclient.events``): ``import providers.openai`` and a plain call load neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, CallIds
from chatclient.responses import ChatResponse, ChatResponseMetadata, FinishReason, Generation, GenerationMetadata

from ._mapping import (
    _REASONING_KEYS,
    PROVIDER,
    REASONING_FIELD_KEY,
    _arguments,
    _response_extra,
    finish_reason,
    parse_usage,
    split_content,
    stream_error,
)

__all__ = ["StreamParser"]

_THINKING_CHUNKS = "\0thinking"
"""Where :func:`_chunked_delta` puts the text of a delta's thinking chunks (never a wire key)."""
_DELTA_REASONING_KEYS = (*_REASONING_KEYS, _THINKING_CHUNKS)


def _chunked_delta(delta: dict[str, Any], content: list[Any]) -> dict[str, Any]:
    """A delta whose ``content`` is a list of chunks (Mistral), with its text as ``content`` and its
    thinking under :data:`_THINKING_CHUNKS`."""
    text, thinking = split_content(content)
    return {**delta, "content": text, _THINKING_CHUNKS: thinking}


class _Choice:
    """What the parser remembers about one choice of a stream."""

    __slots__ = (
        "calls",
        "finished",
        "ids",
        "last_key",
        "named",
        "reasoning",
        "reasoning_field",
        "refusal",
        "saw_calls",
    )

    def __init__(self) -> None:
        self.calls: dict[Any, tuple[str, str]] = {}
        """Fragment key (the wire's ``index``) → the call's own id and the wire's id."""
        self.ids = CallIds()
        """Gives each call its own id as it starts, as a whole reply's calls get theirs."""
        self.named: set[str] = set()
        """Ids of the calls whose ``ToolCallStarted`` (with a name) was sent."""
        self.last_key: Any = None
        self.reasoning: list[str] = []
        self.reasoning_field: str | None = None
        """The wire field the reasoning came in (``None`` for Mistral's thinking chunks)."""
        self.refusal: list[str] = []
        self.saw_calls = False
        self.finished = False


class StreamParser:
    """Turns decoded ``data:`` events of one stream into model events (see ``ChatModel``'s contract).

    The first event's id and model go out as a ``ChatResponse`` chunk. Text deltas go out as
    ``TextDelta`` (the hot path: no pydantic model per delta), reasoning deltas (``reasoning_content``
    / ``reasoning``) as ``ReasoningDelta``. Tool-call fragments are keyed by their ``index`` (only the
    first fragment of an index has the ``id``): the first becomes ``ToolCallStarted``, each argument
    piece a ``ToolCallDelta`` under the call's id. Each call gets its own id as it starts
    (``CallIds``: a repeated or missing wire id is replaced, as in a call), so two calls are never
    merged; without an ``index``, a fragment with a name starts the next call. The reasoning and
    refusal text is also collected into the message metadata of the chunk that carries the finish
    reason; the usage-only event (``choices: []``) becomes a chunk with usage. :meth:`finish` tells
    a complete stream from a cut one.
    """

    __slots__ = ("_choices", "_final_meta", "_headers", "_meta")

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        self._choices: dict[int, _Choice] = {}
        self._headers = headers
        self._meta: ChatResponseMetadata | None = None
        self._final_meta: ChatResponseMetadata | None = None

    def feed(self, event: Any) -> list[ModelEvent]:
        """One event's data (the shell hands over ``(name, data)``: Chat Completions names none)."""
        if type(event) is tuple:
            event = event[1]
        if not isinstance(event, dict):
            raise MalformedResponseError(f"Unexpected stream event: {event!r:.200}", provider=PROVIDER)
        if "error" in event:
            raise stream_error(event)
        try:
            return self._feed(event)
        except MalformedResponseError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise MalformedResponseError(
                f"Unexpected stream event ({type(exc).__name__}: {exc}): {event!r:.200}", provider=PROVIDER
            ) from exc

    def finish(self, saw_done: bool = False) -> None:
        """Call when the body ended. Complete means ``[DONE]`` came, or every choice got its finish
        reason (for servers that leave ``[DONE]`` out); anything else, and a stream without a single
        event, is a cut stream: ``StreamIncompleteError``, never a (partial or empty) reply."""
        if self._meta is None:
            raise StreamIncompleteError(
                "The event stream ended without a single event (no [DONE]): the server failed after its 200",
                provider=PROVIDER,
            )
        choices = self._choices.values()
        if not saw_done and not (choices and all(choice.finished for choice in choices)):
            raise StreamIncompleteError(
                "The event stream ended before [DONE] and before a finish reason", provider=PROVIDER
            )

    def _feed(self, event: dict[str, Any]) -> list[ModelEvent]:
        events: list[ModelEvent]
        meta = self._meta
        if meta is None:
            meta = self._meta = ChatResponseMetadata(id=event.get("id"), model=event.get("model"))
            # Response-level facts ride on the closing chunks only, keeping the opening one lean.
            self._final_meta = meta.model_copy(update={"extra": _response_extra(event, self._headers)})
            events = [ChatResponse((), meta)]
        else:
            events = []
        choices = event.get("choices")
        if choices:
            for position, choice in enumerate(choices):
                self._choice(choice, position, events)
        usage_data = event.get("usage")
        if usage_data is None and isinstance(event.get("x_groq"), dict):
            usage_data = event["x_groq"].get("usage")
        usage = parse_usage(usage_data)
        if usage is not None:
            events.append(ChatResponse((), (self._final_meta or meta).model_copy(update={"usage": usage})))
        return events

    def _choice(self, choice: dict[str, Any], position: int, events: list[ModelEvent]) -> None:
        index = choice.get("index", position)
        delta = choice.get("delta") or {}
        raw_reason = choice.get("finish_reason")
        content = delta.get("content")
        if isinstance(content, list):
            delta = _chunked_delta(delta, content)
            content = delta["content"]
        text = content if isinstance(content, str) and content else None
        if text is not None and raw_reason is None and (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
            # The hot path: a text delta and nothing else (``role`` may come along).
            events.append(TextDelta(text, index))
            if index not in self._choices:
                self._choices[index] = _Choice()
            return
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = _Choice()
        for key in _DELTA_REASONING_KEYS:
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                state.reasoning.append(piece)
                if key != _THINKING_CHUNKS:
                    state.reasoning_field = key
                events.append(ReasoningDelta(piece, index))
                break
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            state.refusal.append(refusal)
        if text is not None:
            events.append(TextDelta(text, index))
        for raw in delta.get("tool_calls") or ():
            self._fragment(state, raw, index, events)
        if raw_reason is not None:
            events.append(self._finished(state, index, raw_reason))

    def _finished(self, state: _Choice, index: int, raw_reason: Any) -> ChatResponse:
        """The chunk that closes a choice: finish reason, and the reasoning and refusal it collected."""
        state.finished = True
        metadata: dict[str, JsonValue] = {}
        if state.reasoning:
            metadata["reasoning"] = "".join(state.reasoning)
            if state.reasoning_field is not None:
                metadata[REASONING_FIELD_KEY] = state.reasoning_field
        if state.refusal:
            metadata["refusal"] = "".join(state.refusal)
        reason = FinishReason.CONTENT_FILTER if state.refusal else finish_reason(raw_reason, state.saw_calls)
        extra: dict[str, JsonValue] = {"raw_finish_reason": raw_reason}
        generation = Generation(
            AssistantMessage(None, metadata=metadata), GenerationMetadata(finish_reason=reason, extra=extra)
        )
        generations = (generation,) if index == 0 else (*[Generation(AssistantMessage(None))] * index, generation)
        return ChatResponse(generations, self._final_meta)

    @staticmethod
    def _fragment(state: _Choice, raw: dict[str, Any], index: int, events: list[ModelEvent]) -> None:
        call_id = raw.get("id")
        call_id = str(call_id) if call_id else ""
        wire_index = raw.get("index")
        key = wire_index
        if key is None:
            key = call_id if call_id else state.last_key
        function = raw.get("function") or {}
        name = function.get("name") or ""
        call = state.calls.get(key)
        if (
            call is None
            or (call_id and call[1] != call_id)  # a server that reuses an index for the next call
            or (wire_index is None and name and call[0] in state.named)  # no index: a named fragment starts
        ):
            call = state.calls[key] = (state.ids.assign(call_id), call_id)
            new = True
        else:
            new = False
        known = call[0]
        state.last_key = key
        state.saw_calls = True
        if new or (name and known not in state.named):
            # Started once per call; again only if a server sent the name after the first fragment.
            wire = None if known == call[1] else call[1]
            events.append(ToolCallStarted(known, name, index, raw.get("type") or "function", wire))
            if name:
                state.named.add(known)
        arguments = _arguments(function.get("arguments"))
        if arguments:
            events.append(ToolCallDelta(known, arguments, index))
