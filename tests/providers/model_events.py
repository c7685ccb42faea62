"""Reading a provider's stream of model events in tests: the deltas, the chunks, the assembled reply."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.responses import ChatResponse
from chatclient.streaming import ChatResponseAccumulator

Delta = TextDelta | ReasoningDelta | ToolCallStarted | ToolCallDelta


def texts(events: Iterable[ModelEvent]) -> list[str]:
    """The text deltas, in order."""
    return [e.text for e in events if isinstance(e, TextDelta)]


def reasoning(events: Iterable[ModelEvent]) -> list[str]:
    """The reasoning (thinking) deltas, in order."""
    return [e.text for e in events if isinstance(e, ReasoningDelta)]


def deltas(events: Iterable[ModelEvent]) -> list[Delta]:
    """Every event that is not a ``ChatResponse`` chunk, in order."""
    return [e for e in events if not isinstance(e, ChatResponse)]


def chunks(events: Iterable[ModelEvent]) -> list[ChatResponse]:
    """The ``ChatResponse`` chunks (ids, usage, finish reasons, metadata), in order."""
    return [e for e in events if isinstance(e, ChatResponse)]


def assemble(events: Sequence[ModelEvent]) -> ChatResponse:
    """The reply the events make, as the chain's accumulator builds it."""
    accumulator = ChatResponseAccumulator()
    for event in events:
        accumulator.add(event)
    return accumulator.build()
