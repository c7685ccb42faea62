"""Assembling a streamed reply from its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import JsonValue

from .messages import AssistantMessage, ToolCall
from .responses import (
    ChatResponse,
    ChatResponseMetadata,
    FinishReason,
    Generation,
    GenerationMetadata,
    Usage,
)

__all__ = ["ChatResponseAccumulator"]


@dataclass
class _ToolCallParts:
    id: str
    type: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class _GenerationParts:
    text: list[str] = field(default_factory=list)
    saw_text: bool = False
    tool_calls: dict[str, _ToolCallParts] = field(default_factory=dict)
    finish_reason: FinishReason | None = None
    message_metadata: dict[str, JsonValue] = field(default_factory=dict)
    extra: dict[str, JsonValue] = field(default_factory=dict)


class ChatResponseAccumulator:
    """Joins stream chunks into the ``ChatResponse`` the same reply would have been in one call.

    Text deltas concatenate; tool-call fragments join by ``id`` (arguments concatenate, the first
    non-empty name and type win, first-seen order is kept); the last finish reason and the last
    usage win; ids, model and metadata merge with later values winning.
    """

    __slots__ = ("_extra", "_generations", "_id", "_model", "_usage", "chunks")

    def __init__(self) -> None:
        self._generations: list[_GenerationParts] = []
        self._id: str | None = None
        self._model: str | None = None
        self._usage: Usage | None = None
        self._extra: dict[str, JsonValue] = {}
        self.chunks = 0

    def add(self, chunk: ChatResponse) -> None:
        self.chunks += 1
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
            while len(self._generations) <= index:
                self._generations.append(_GenerationParts())
            self._add_generation(self._generations[index], generation)

    @staticmethod
    def _add_generation(parts: _GenerationParts, generation: Generation) -> None:
        output = generation.output
        if output.text is not None:
            parts.saw_text = True
            if output.text:
                parts.text.append(output.text)
        for fragment in output.tool_calls:
            call = parts.tool_calls.get(fragment.id)
            if call is None:
                parts.tool_calls[fragment.id] = _ToolCallParts(
                    fragment.id, fragment.type, fragment.name, [fragment.arguments]
                )
            else:
                call.arguments.append(fragment.arguments)
                if not call.name:
                    call.name = fragment.name
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
                ToolCall(id=c.id, type=c.type, name=c.name, arguments="".join(c.arguments))
                for c in parts.tool_calls.values()
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
