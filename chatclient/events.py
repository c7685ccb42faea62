"""Typed stream events: what a streamed turn is made of, from the model's deltas to the final response.

One pipeline carries them:

- a provider's ``ChatModel.stream()`` yields :data:`ModelEvent` values: deltas (:class:`TextDelta`,
  :class:`ReasoningDelta`, :class:`ToolCallStarted`, :class:`ToolCallDelta`) and ``ChatResponse``
  chunks for everything else (ids, usage, finish reasons, message metadata such as thinking
  signatures). A minimal provider may yield only ``ChatResponse`` chunks, or one whole reply;
- the model call at the bottom of the chain folds them with the one
  :class:`~chatclient.streaming.ChatResponseAccumulator` and ends the stream with
  :class:`TurnFinished`, holding the assembled response;
- advisors and the tool loop pass events on and never re-assemble: the tool loop adds
  :class:`ToolCallReady`, :class:`ToolResultReady`, :class:`RoundFinished` and :class:`TurnPaused`,
  and ends the turn with its own :class:`TurnFinished`.

So every stream through the chain ends with exactly one :class:`TurnFinished`, and its response is
the one ``call()`` would have returned. (For an advisor *inside* the tool loop, the "turn" it sees
is one model round.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ._display import Code, clip, html_code, md_code
from .messages import ToolCall, ToolResponse
from .responses import ChatResponse, FinishReason, Usage

if TYPE_CHECKING:
    from .envelope import ChatClientResponse
    from .tools.confirmation import PendingToolCalls

__all__ = [
    "ModelEvent",
    "ReasoningDelta",
    "RoundFinished",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolResultReady",
    "TurnFinished",
    "TurnPaused",
]


class _Display:
    """Short reprs and notebook rendering, computed only when asked (events are on the hot path)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _event_repr(self)

    def _repr_markdown_(self) -> str:
        return _event_markdown(self)

    def _repr_html_(self) -> str:
        return _event_html(self)


@dataclass(frozen=True, slots=True, repr=False)
class TextDelta(_Display):
    """A piece of the reply's text, as it arrives. ``index`` is the generation (0 for most replies)."""

    text: str
    index: int = 0


@dataclass(frozen=True, slots=True, repr=False)
class ReasoningDelta(_Display):
    """A piece of the model's visible reasoning (thinking), for display.

    What must be sent back to the provider (signed thinking blocks, encrypted reasoning items) is
    kept in the reply's message metadata, not rebuilt from these deltas.
    """

    text: str
    index: int = 0


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallStarted(_Display):
    """The model began a tool call: its id and name are known, its arguments are still coming.

    ``id`` is the call's own within its reply (the one the assembled reply and any decision use);
    ``wire_id`` the provider's, when it had to be replaced (see ``chatclient.messages.CallIds``).
    """

    id: str
    name: str
    index: int = 0
    type: str = "function"
    wire_id: str | None = None


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallDelta(_Display):
    """A fragment of a started call's JSON arguments; fragments of one ``id`` concatenate."""

    id: str
    arguments: str
    index: int = 0


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallReady(_Display):
    """A tool call of a finished round, with its complete arguments, before anything runs."""

    call: ToolCall
    round: int

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> str:
        return self.call.arguments


@dataclass(frozen=True, slots=True, repr=False)
class ToolResultReady(_Display):
    """One tool call's result, as the model will see it (an error flagged as such)."""

    response: ToolResponse
    round: int

    @property
    def id(self) -> str:
        return self.response.id

    @property
    def name(self) -> str:
        return self.response.name

    @property
    def result(self) -> str:
        return self.response.response_data

    @property
    def is_error(self) -> bool:
        return self.response.is_error


@dataclass(frozen=True, slots=True, repr=False)
class RoundFinished(_Display):
    """A model round of the tool loop ended; ``response`` is that round's reply, assembled."""

    round: int
    response: ChatClientResponse

    @property
    def usage(self) -> Usage:
        chat = self.response.chat_response
        return chat.usage if chat is not None else Usage()

    @property
    def finish_reason(self) -> FinishReason | None:
        chat = self.response.chat_response
        result = chat.result if chat is not None else None
        return result.finish_reason if result is not None else None


@dataclass(frozen=True, slots=True, repr=False)
class TurnPaused(_Display):
    """The turn paused for a person's decision; nothing of the paused reply has run."""

    pending: PendingToolCalls


@dataclass(frozen=True, slots=True, repr=False)
class TurnFinished(_Display):
    """The last event of every stream through the chain: the final response, as ``call()`` gives it."""

    response: ChatClientResponse


ModelEvent = Union[TextDelta, ReasoningDelta, ToolCallStarted, ToolCallDelta, ChatResponse]  # noqa: UP007
"""What a ``ChatModel.stream()`` yields: deltas, and ``ChatResponse`` chunks for everything else."""

StreamEvent = Union[  # noqa: UP007
    TextDelta,
    ReasoningDelta,
    ToolCallStarted,
    ToolCallDelta,
    ToolCallReady,
    ToolResultReady,
    RoundFinished,
    TurnPaused,
    TurnFinished,
]
"""What a stream through the advisor chain yields; it always ends with one :class:`TurnFinished`."""


# ---------------------------------------------------------------------------- rendering


def _event_repr(event: object) -> str:
    kind = type(event).__name__
    if isinstance(event, (TextDelta, ReasoningDelta)):
        index = f", index={event.index}" if event.index else ""
        return f"{kind}({clip(event.text)!r}{index})"
    if isinstance(event, ToolCallStarted):
        return f"{kind}(id={event.id!r}, name={event.name!r})"
    if isinstance(event, ToolCallDelta):
        return f"{kind}(id={event.id!r}, arguments={clip(event.arguments)!r})"
    if isinstance(event, ToolCallReady):
        return f"{kind}({event.name}({clip(event.arguments)}), id={event.id!r}, round={event.round})"
    if isinstance(event, ToolResultReady):
        error = ", error" if event.is_error else ""
        return f"{kind}({event.name} -> {clip(event.result)!r}, id={event.id!r}, round={event.round}{error})"
    if isinstance(event, RoundFinished):
        finish = event.finish_reason.value if event.finish_reason else None
        return f"{kind}(round={event.round}, finish={finish!r}, tokens={event.usage.total_tokens})"
    if isinstance(event, TurnPaused):
        return f"{kind}(awaiting={event.pending.awaiting_ids})"
    if isinstance(event, TurnFinished):
        return f"{kind}({event.response!r})"
    return object.__repr__(event)


def _event_line(event: object, code: Code) -> tuple[str, str]:
    """The event's label and a one-line summary, its values rendered by ``code``."""
    if isinstance(event, TextDelta):
        return "text", code(clip(event.text))
    if isinstance(event, ReasoningDelta):
        return "reasoning", code(clip(event.text))
    if isinstance(event, ToolCallStarted):
        return "tool call started", f"{code(event.name)} ({code(event.id)})"
    if isinstance(event, ToolCallDelta):
        return "arguments", f"{code(clip(event.arguments))} ({code(event.id)})"
    if isinstance(event, ToolCallReady):
        return "tool call", f"{code(event.name)} {code(clip(event.arguments))} ({code(event.id)}, round {event.round})"
    if isinstance(event, ToolResultReady):
        label = "tool error" if event.is_error else "tool result"
        return label, f"{code(event.name)} → {code(clip(event.result))} ({code(event.id)}, round {event.round})"
    if isinstance(event, RoundFinished):
        finish = event.finish_reason.value if event.finish_reason else "none"
        return "round finished", f"round {event.round}, finish {code(finish)}, {event.usage.total_tokens} tokens"
    return type(event).__name__, code(_event_repr(event))


def _event_markdown(event: object) -> str:
    if isinstance(event, TurnPaused):
        return event.pending._repr_markdown_()
    if isinstance(event, TurnFinished):
        return event.response._repr_markdown_()
    label, summary = _event_line(event, md_code)
    return f"**{label}** {summary}"


def _event_html(event: object) -> str:
    if isinstance(event, TurnPaused):
        return event.pending._repr_html_()
    if isinstance(event, TurnFinished):
        return event.response._repr_html_()
    label, summary = _event_line(event, html_code)
    return f'<div class="chatclient-event"><strong>{label}</strong> {summary}</div>'
