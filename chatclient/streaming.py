"""Assembling a streamed reply: the one place stream events become a ``ChatResponse``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import JsonValue

from .events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from .messages import AssistantMessage, ToolCall
from .responses import (
    ChatResponse,
    ChatResponseMetadata,
    FinishReason,
    Generation,
    GenerationMetadata,
    Usage,
)

__all__ = ["ChatResponseAccumulator", "delta_events"]


@dataclass
class _ToolCallParts:
    id: str
    type: str
    name: str
    arguments: list[str] = field(default_factory=list)
    wire_id: str | None = None


@dataclass
class _GenerationParts:
    text: list[str] = field(default_factory=list)
    saw_text: bool = False
    tool_calls: list[_ToolCallParts] = field(default_factory=list)
    latest: dict[str, _ToolCallParts] = field(default_factory=dict)
    """Each id's latest call: where its fragments go."""
    finish_reason: FinishReason | None = None
    message_metadata: dict[str, JsonValue] = field(default_factory=dict)
    extra: dict[str, JsonValue] = field(default_factory=dict)


class ChatResponseAccumulator:
    """Joins a stream's events into the ``ChatResponse`` the same reply would have been in one call.

    Text deltas concatenate; tool-call fragments join by ``id`` (arguments concatenate, the first
    non-empty name and type win, first-seen order is kept), except that a ``ToolCallStarted`` with a
    name, for an id whose call already has its name, is a new call: two calls are never merged, even
    from a parser that repeats the provider's ids (the reply then gives them ids of their own, as in
    a call: ``chatclient.messages.CallIds``). The last finish reason and the last usage win; ids,
    model and metadata merge with later values winning. Reasoning deltas are for display: what a
    provider must get back is in the message metadata its chunks carry.
    """

    __slots__ = ("_extra", "_generations", "_id", "_model", "_usage", "events")

    def __init__(self) -> None:
        self._generations: list[_GenerationParts] = []
        self._id: str | None = None
        self._model: str | None = None
        self._usage: Usage | None = None
        self._extra: dict[str, JsonValue] = {}
        self.events = 0
        """How many events (or chunks) were added."""

    @property
    def chunks(self) -> int:
        return self.events

    def _parts(self, index: int) -> _GenerationParts:
        generations = self._generations
        while len(generations) <= index:
            generations.append(_GenerationParts())
        return generations[index]

    def add(self, event: ModelEvent) -> None:
        """Fold one event: a delta, or a ``ChatResponse`` chunk."""
        self.events += 1
        if isinstance(event, TextDelta):
            parts = self._parts(event.index)
            parts.saw_text = True
            parts.text.append(event.text)
        elif isinstance(event, ToolCallDelta):
            self._add_fragment(self._parts(event.index), event.id, "", "", event.arguments, None, False)
        elif isinstance(event, ToolCallStarted):
            self._add_fragment(self._parts(event.index), event.id, event.type, event.name, "", event.wire_id, True)
        elif isinstance(event, ReasoningDelta):
            self._parts(event.index)
        else:
            self._add_chunk(event)

    def _add_chunk(self, chunk: ChatResponse) -> None:
        meta = chunk.metadata
        if meta.id is not None:
            self._id = meta.id
        if meta.model is not None:
            self._model = meta.model
        if meta.usage is not None:
            self._usage = meta.usage
        if meta.extra:
            self._extra.update(meta.extra)
        for index, generation in enumerate(chunk.generations):
            self._add_generation(self._parts(index), generation)

    @staticmethod
    def _add_fragment(
        parts: _GenerationParts,
        call_id: str,
        type_: str,
        name: str,
        arguments: str,
        wire_id: str | None,
        start: bool,
    ) -> None:
        call = parts.latest.get(call_id)
        if call is None or (start and name and call.name):
            call = parts.latest[call_id] = _ToolCallParts(call_id, type_ or "function", name, [arguments], wire_id)
            parts.tool_calls.append(call)
            return
        call.arguments.append(arguments)
        if not call.name:
            call.name = name
        if wire_id is not None:
            call.wire_id = wire_id

    @classmethod
    def _add_generation(cls, parts: _GenerationParts, generation: Generation) -> None:
        output = generation.output
        if output.text is not None:
            parts.saw_text = True
            if output.text:
                parts.text.append(output.text)
        for fragment in output.tool_calls:
            cls._add_fragment(
                parts, fragment.id, fragment.type, fragment.name, fragment.arguments, fragment.wire_id, False
            )
        if output.metadata:
            parts.message_metadata.update(output.metadata)
        gen_meta = generation.metadata
        if gen_meta.finish_reason is not None:
            parts.finish_reason = gen_meta.finish_reason
        if gen_meta.extra:
            parts.extra.update(gen_meta.extra)

    def build(self) -> ChatResponse:
        generations = []
        for parts in self._generations:
            calls = tuple(
                ToolCall(id=c.id, type=c.type, name=c.name, arguments="".join(c.arguments), wire_id=c.wire_id)
                for c in parts.tool_calls
            )
            text = "".join(parts.text) if parts.saw_text else None
            message = AssistantMessage(text, tool_calls=calls, metadata=parts.message_metadata)
            generations.append(
                Generation(message, GenerationMetadata(finish_reason=parts.finish_reason, extra=parts.extra))
            )
        return ChatResponse(
            generations,
            ChatResponseMetadata(id=self._id, model=self._model, usage=self._usage, extra=self._extra),
        )


def delta_events(chunk: ChatResponse) -> Iterator[TextDelta | ToolCallStarted | ToolCallDelta]:
    """The deltas a ``ChatResponse`` chunk holds, for passing on to a stream's consumer.

    A fragment that names its tool is the call's start; later fragments are argument deltas.
    """
    for index, generation in enumerate(chunk.generations):
        output = generation.output
        if output.text:
            yield TextDelta(output.text, index)
        for fragment in output.tool_calls:
            if fragment.name:
                yield ToolCallStarted(fragment.id, fragment.name, index, fragment.type, fragment.wire_id)
            if fragment.arguments:
                yield ToolCallDelta(fragment.id, fragment.arguments, index)
