"""Compaction: when a conversation's view grows past a trigger, a strategy decides which turns the
model stops seeing, and a **boundary event** appended to the log records it.

The log is never rewritten: the boundary (``type == "compaction"``) names the first kept event
and carries the summary, if any; the view after it is the summary, then the kept turns, then every
turn written since. Strategies drop whole turns only, so a view never starts with a tool result
nor ends with an unanswered tool call, and the latest turn is always kept.

``Compaction(trigger=any_of(TurnCount(20), TokenCount(8000)), strategy=RecursiveSummary(client))``
on ``SessionMemoryAdvisor(repository, compaction=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import ConfigurationError
from ..messages import AssistantMessage, Message, SystemMessage, UserMessage
from ..templates import PromptTemplate
from .log import NewEvent, SessionEvent, decode_message, encode_message
from .tokens import TokenCounter, default_token_counter, message_text, messages_tokens
from .window import messages_of, window

if TYPE_CHECKING:
    from ..prompt import Prompt

__all__ = [
    "BOUNDARY",
    "AnyOf",
    "Compaction",
    "CompactionPlan",
    "LoggedTurn",
    "RecursiveSummary",
    "SessionView",
    "SlidingWindow",
    "Strategy",
    "SummaryClient",
    "TokenBudget",
    "TokenCount",
    "Trigger",
    "TurnCount",
    "TurnWindow",
    "any_of",
    "boundary_event",
    "plan_compaction",
    "view_of",
]

BOUNDARY = "compaction"
"""The event type of a compaction boundary."""

SUMMARY_REQUEST = "Summarise our conversation so far."


@dataclass(frozen=True, slots=True)
class LoggedTurn:
    """One stored turn: its events, contiguous in the log (a turn is appended in one batch)."""

    turn_id: str
    events: tuple[SessionEvent, ...]

    @property
    def first_seq(self) -> int:
        return self.events[0].seq

    def messages(self) -> list[Message]:
        return [e.message() for e in self.events]


@dataclass(frozen=True, slots=True)
class SessionView:
    """What the model sees of a conversation: the summary of compacted turns, then whole turns."""

    summary: tuple[Message, ...]
    turns: tuple[LoggedTurn, ...]

    def messages(self) -> list[Message]:
        return [*self.summary, *messages_of([e for t in self.turns for e in t.events])]


def _boundary(event: SessionEvent) -> tuple[int, tuple[Message, ...]]:
    data = json.loads(event.payload)
    return int(data["first_kept_seq"]), tuple(decode_message(p) for p in data["summary"])


def first_kept_seq(boundary: SessionEvent | None) -> int:
    """Where the view begins after ``boundary`` (1: the whole log)."""
    return _boundary(boundary)[0] if boundary is not None else 1


def view_of(
    events: Sequence[SessionEvent], boundary: SessionEvent | None = None, messages: int | None = None
) -> SessionView:
    """The view of ``events`` (read from the boundary's first kept event on, possibly only the last
    N of them): the boundary's summary, then the whole turns (of the last ``messages`` messages, if
    given), cut where a turn begins."""
    first, summary = _boundary(boundary) if boundary is not None else (1, ())
    kept = window([e for e in events if e.type == "message" and e.seq >= first], messages)
    turns: list[LoggedTurn] = []
    start = 0
    for index in range(1, len(kept) + 1):
        if index == len(kept) or kept[index].starts_turn or kept[index].turn_id != kept[start].turn_id:
            turns.append(LoggedTurn(kept[start].turn_id, tuple(kept[start:index])))
            start = index
    return SessionView(summary, tuple(turns))


# ---------------------------------------------------------------------------------------- triggers


@runtime_checkable
class Trigger(Protocol):
    """Decides when a view is due for compaction."""

    def fires(self, view: SessionView, counter: TokenCounter) -> bool: ...


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{name} must be a positive number, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class TurnCount:
    """Fires when the view holds more than ``max_turns`` turns (a summary is not a turn)."""

    max_turns: int

    def __post_init__(self) -> None:
        _positive("TurnCount(max_turns)", self.max_turns)

    def fires(self, view: SessionView, counter: TokenCounter) -> bool:
        return len(view.turns) > self.max_turns


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Fires when the view (summary included) weighs ``max_tokens`` or more."""

    max_tokens: int
    counter: TokenCounter | None = None

    def __post_init__(self) -> None:
        _positive("TokenCount(max_tokens)", self.max_tokens)

    def fires(self, view: SessionView, counter: TokenCounter) -> bool:
        return messages_tokens(view.messages(), self.counter or counter) >= self.max_tokens


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Fires when any of its triggers does."""

    triggers: tuple[Trigger, ...]

    def fires(self, view: SessionView, counter: TokenCounter) -> bool:
        return any(t.fires(view, counter) for t in self.triggers)


def any_of(*triggers: Trigger) -> AnyOf:
    if not triggers:
        raise ConfigurationError("any_of() needs at least one trigger")
    return AnyOf(tuple(triggers))


# -------------------------------------------------------------------------------------- strategies


@runtime_checkable
class Strategy(Protocol):
    """Decides which turns stay: the index of the first kept turn (always keeping the last one)."""

    def keep_from(self, view: SessionView, counter: TokenCounter) -> int: ...


def _suffix(view: SessionView, fits: int, weigh: Callable[[list[Message]], int]) -> int:
    """The first turn of the longest suffix of whole turns weighing at most ``fits``; the last turn
    stays even when it alone is heavier."""
    total = 0
    for index in range(len(view.turns) - 1, -1, -1):
        total += weigh(view.turns[index].messages())
        if total > fits:
            return min(index + 1, len(view.turns) - 1)
    return 0


@dataclass(frozen=True, slots=True)
class SlidingWindow:
    """Keeps the newest whole turns holding at most ``max_messages`` messages."""

    max_messages: int

    def __post_init__(self) -> None:
        _positive("SlidingWindow(max_messages)", self.max_messages)

    def keep_from(self, view: SessionView, counter: TokenCounter) -> int:
        return _suffix(view, self.max_messages, len)


@dataclass(frozen=True, slots=True)
class TurnWindow:
    """Keeps the newest ``max_turns`` turns."""

    max_turns: int

    def __post_init__(self) -> None:
        _positive("TurnWindow(max_turns)", self.max_turns)

    def keep_from(self, view: SessionView, counter: TokenCounter) -> int:
        return max(len(view.turns) - self.max_turns, 0)


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """Keeps the newest whole turns weighing at most ``max_tokens`` (a contiguous suffix)."""

    max_tokens: int
    counter: TokenCounter | None = None

    def __post_init__(self) -> None:
        _positive("TokenBudget(max_tokens)", self.max_tokens)

    def keep_from(self, view: SessionView, counter: TokenCounter) -> int:
        count = self.counter or counter
        return _suffix(view, self.max_tokens, lambda messages: messages_tokens(messages, count))


DEFAULT_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an assistant. Write one "
    "summary that merges the previous summary (if any) with the new turns: facts, decisions, names, "
    "tool calls with their arguments and results, and open questions. Reply with the summary only."
)

DEFAULT_TRANSCRIPT_TEMPLATE = PromptTemplate("Previous summary:{previous_summary}\n\nNew turns:\n{turns}")
"""The summariser's user message; ``previous_summary`` is ``" none"`` or a newline and the summary, ``turns``
the dropped turns as ``role: text`` lines. Replace it with ``RecursiveSummary(transcript_template=...)``."""


class _SummaryReply(Protocol):
    def content(self) -> str | None: ...


class _AsyncSummaryReply(Protocol):
    async def content(self) -> str | None: ...


class _SummaryRequest(Protocol):
    def call(self) -> _SummaryReply: ...

    def acall(self) -> _AsyncSummaryReply: ...


class SummaryClient(Protocol):
    """What :class:`RecursiveSummary` asks of its client: a ``ChatClient`` is one. Named by the calls
    it makes, not by the class, because memory sits below the client and does not import it."""

    def prompt(self, content: Prompt, /) -> _SummaryRequest: ...


@dataclass(frozen=True)
class RecursiveSummary:
    """Keeps the newest ``keep_turns`` turns and replaces the rest with a summary written by
    ``client``; each pass summarises the previous summary with the newly dropped turns, so the
    summary stays one user/assistant pair at the start of the view. A blank summary skips the pass."""

    client: SummaryClient
    keep_turns: int = 4
    instructions: str = DEFAULT_INSTRUCTIONS
    transcript_template: PromptTemplate = DEFAULT_TRANSCRIPT_TEMPLATE
    """The user message the summariser gets, a template of ``previous_summary`` and ``turns``."""

    def __post_init__(self) -> None:
        _positive("RecursiveSummary(keep_turns)", self.keep_turns)
        template = PromptTemplate.of(self.transcript_template).expecting("previous_summary", "turns")
        object.__setattr__(self, "transcript_template", template)

    def keep_from(self, view: SessionView, counter: TokenCounter) -> int:
        return max(len(view.turns) - self.keep_turns, 0)

    def request(self, plan: CompactionPlan) -> list[Message]:
        """The summariser's prompt: the instructions, then the previous summary and the dropped
        turns as a transcript (tool calls and results by name, arguments and result)."""
        previous = next((m.text for m in reversed(plan.previous_summary) if isinstance(m, AssistantMessage)), None)
        lines = [f"{m.role}: {message_text(m)}" for turn in plan.dropped for m in turn.messages()]
        transcript = self.transcript_template.render(
            previous_summary=f"\n{previous}" if previous else " none", turns="\n".join(lines)
        )
        return [SystemMessage(self.instructions), UserMessage(transcript)]


@dataclass(frozen=True)
class Compaction:
    """A trigger and a strategy, configured together; ``counter`` counts tokens for both (default:
    ``tiktoken`` when installed, else an estimate)."""

    trigger: Trigger
    strategy: Strategy
    counter: TokenCounter = field(default_factory=default_token_counter)

    def __post_init__(self) -> None:
        if not isinstance(self.trigger, Trigger) or not isinstance(self.strategy, Strategy):
            raise ConfigurationError(
                f"Compaction needs a trigger and a strategy, got {self.trigger!r} and {self.strategy!r}"
            )


# ------------------------------------------------------------------------------------ the boundary


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """A compaction due at ``base_version``: what is dropped and where the view will begin."""

    base_version: int
    first_kept_seq: int
    dropped: tuple[LoggedTurn, ...]
    previous_summary: tuple[Message, ...]
    summariser: RecursiveSummary | None


def plan_compaction(compaction: Compaction, view: SessionView, version: int) -> CompactionPlan | None:
    """The compaction ``view`` (read at ``version``) is due for, or ``None``."""
    if not view.turns or not compaction.trigger.fires(view, compaction.counter):
        return None
    keep = min(compaction.strategy.keep_from(view, compaction.counter), len(view.turns) - 1)
    if keep <= 0:
        return None
    summariser = compaction.strategy if isinstance(compaction.strategy, RecursiveSummary) else None
    return CompactionPlan(version, view.turns[keep].first_seq, view.turns[:keep], view.summary, summariser)


def summary_messages(text: str | None) -> tuple[Message, ...] | None:
    """The synthetic summary turn, or ``None`` for a blank summary (the pass is skipped)."""
    if text is None or not text.strip():
        return None
    synthetic = {"synthetic": True}
    return (UserMessage(SUMMARY_REQUEST, metadata=synthetic), AssistantMessage(text.strip(), metadata=synthetic))


def boundary_event(plan: CompactionPlan, summary: Sequence[Message] | None = None) -> NewEvent:
    """The boundary to append with ``expected_version=plan.base_version``; its id comes from that
    version, so two compactions of one state cannot both land. Without a new summary the previous
    one is carried over."""
    kept = tuple(summary) if summary is not None else plan.previous_summary
    payload = json.dumps(
        {"first_kept_seq": plan.first_kept_seq, "summary": [encode_message(m) for m in kept]}, separators=(",", ":")
    )
    turn_id = f"compaction-{plan.base_version}"
    return NewEvent(f"{turn_id}:0", turn_id, payload, BOUNDARY)
