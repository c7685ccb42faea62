"""What a turn keeps so that a failure in its middle is continued, never restarted.

A turn's progress (:class:`TurnProgress`: its messages so far, tool results included, its round,
usage and id) is recorded after each tool round, before the next model round is sent, where the turn
lives: on the raised error (:class:`TurnContinuation`, ``err.continuation``) for a turn that lives in
memory, and in the pending store for a resumed turn (a :class:`JournalEntry` per paused state, moved
by compare-and-set: ``running`` while its tools run, ``recorded`` once their results are kept; the
state is taken when the turn ends). Budgets (:class:`UsageLimits`) are checked before each model round.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from .errors import ConfigurationError
from .messages import Message
from .responses import Usage

if TYPE_CHECKING:
    from .tools.confirmation import ToolCallDecisions

__all__ = ["JournalEntry", "TurnContinuation", "TurnProgress", "UsageBudget", "UsageLimits", "decisions_digest"]

UNKNOWN_OUTCOME_MESSAGE = (
    "This tool call was started, but the process running it stopped before its result was recorded: "
    "its outcome is unknown. It was not run again. Do not assume it succeeded or failed; tell the user."
)
"""The result the model reads for a call that was started and whose result was never recorded (a
crash in the middle), unless its tool is ``idempotent`` and simply runs again."""


class TurnProgress(BaseModel):
    """A turn after its last recorded tool round: what the next model round sends, and the turn's
    place (id, first message, round, usage) so the continued turn is the same one."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    turn_id: str
    turn_start: int
    round: int
    history: tuple[Message, ...]
    usage: Usage | None = None
    limit_exceeded: str | None = None

    @property
    def turn_messages(self) -> tuple[Message, ...]:
        return self.history[self.turn_start :]


@dataclass(frozen=True)
class TurnContinuation:
    """How to finish a turn that stopped after tools ran: ``client.prompt().continue_turn(c)`` then
    ``call()``, ``stream()``, ``acall()`` or ``astream()``. No tool runs again; the model reads
    exactly the recorded results.

    For a turn resumed from a pending store, the progress is in that store (``stored``, with the
    ``decisions`` it ran under): continuing is the same as retrying ``resume_from`` with them, and
    the store's compare-and-set lets one of several continuations win. Otherwise the progress is
    here, and :meth:`to_json`/:meth:`from_json` carry it to another process.
    """

    progress: TurnProgress
    conversation_id: str = ""
    stored: Any = None
    """The ``StoredPendingToolCalls`` the turn was resumed from, when it was."""
    decisions: ToolCallDecisions | None = None
    journal_version: int | None = None
    """For a memory-backed turn: the version of its journal in the conversation's store when this
    was made; continuing claims the journal at it (compare-and-set: of two continuations, one wins)."""
    started: tuple[str, ...] = ()
    """Calls a process had started when it stopped (a ``running`` journal taken over ``after_crash``):
    the last message of ``progress`` asked for them, and their outcome is unknown."""

    def to_json(self) -> str:
        if self.stored is not None:
            raise ConfigurationError(
                "This turn's progress is kept in its pending store: continue it with "
                "resume_from(store, state_id, decisions) there, not from JSON"
            )
        return json.dumps(
            {
                "progress": self.progress.model_dump(mode="json"),
                "conversation_id": self.conversation_id,
                "journal_version": self.journal_version,
                "started": list(self.started),
            }
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> TurnContinuation:
        data = json.loads(text)
        version = data.get("journal_version")
        return cls(
            TurnProgress.model_validate(data["progress"]),
            str(data.get("conversation_id") or ""),
            journal_version=int(version) if version is not None else None,
            started=tuple(str(i) for i in data.get("started") or ()),
        )


class JournalSlot(Protocol):
    """One turn's journal where a compare-and-set can be made on it (a memory-backed turn's, in its
    conversation's store); a pending store's state (``StoredPendingToolCalls``) is the other kind."""

    @property
    def is_async(self) -> bool: ...

    def record_progress(self, version: int, entry: str) -> bool: ...

    def arecord_progress(self, version: int, entry: str) -> Awaitable[bool]: ...


class TurnJournals(Protocol):
    """A conversation's turn journals, as a memory advisor hands them to the tool loop (on the
    request's context, only when the request has tools)."""

    def open(self, turn_id: str) -> tuple[JournalSlot, int] | Awaitable[tuple[JournalSlot, int]]:
        """The turn's slot and its version (0: none yet), before its first tool batch; refuses the
        turn, before anything ran, when another turn of the conversation is unfinished."""
        ...

    def check(self) -> Awaitable[None] | None:
        """Refuse a new turn, before its first model round, while another turn is unfinished."""
        ...

    def slot(self, turn_id: str) -> JournalSlot:
        """The turn's slot, for a continuation that knows its version."""
        ...


Status = Literal["running", "recorded", "stopped", "released", "completed"]


class JournalEntry(BaseModel):
    """A paused state's progress in its store. ``running``: a resume claimed it and runs a tool batch
    (``started`` names its calls; a crash leaves them "started, outcome unknown"); ``recorded``: the
    batch's results are in ``progress``, the next model round may be sent; ``stopped``: as ``recorded``,
    and the runner let go of it (a memory-backed turn whose model round failed: any request may
    continue it); ``completed``: the turn
    ended (a store may keep this instead of dropping the journal with the state); ``released``: a
    resume was refused before anything ran, the state may be resumed afresh. ``decisions`` is
    the digest of the decisions it runs under (a retry must bring the same)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    status: Status
    decisions: str
    progress: TurnProgress | None = None
    started: tuple[str, ...] = ()
    by: str = ""
    """The writing resume's random token: two resumes never write the same text, so a store that
    resends a write whose reply was lost recognises its own."""

    def dump(self) -> str:
        return self.model_dump_json()

    @classmethod
    def load(cls, text: str | bytes) -> JournalEntry:
        return cls.model_validate_json(text)


def decisions_digest(decisions: ToolCallDecisions) -> str:
    """What makes two sets of decisions the same for a retry: per call, allow or deny, the denial's
    message and the edited arguments (not who decided or why: a retry may come from another process)."""
    canonical = sorted((d.id, d.allowed, d.message, d.arguments) for d in decisions.decisions)
    return hashlib.sha256(json.dumps(canonical).encode()).hexdigest()


@dataclass(frozen=True)
class UsageLimits:
    """Budgets checked before each model round; ``None`` is no limit. ``requests`` counts model
    rounds; the token limits count what the rounds so far used (the next round is refused once a
    limit is reached, since its own use is known only after it)."""

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests", "input_tokens", "output_tokens", "total_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ConfigurationError(f"UsageLimits.{name} is a non-negative int or None, not {value!r}")

    def breach(self, next_request: int, used: Usage | None) -> str | None:
        """What sending request number ``next_request`` after ``used`` would pass, or ``None``."""
        if self.requests is not None and next_request > self.requests:
            return f"requests: round {next_request} would pass the limit of {self.requests}"
        if used is None:
            return None
        for name, value in (
            ("input_tokens", used.prompt_tokens),
            ("output_tokens", used.completion_tokens),
            ("total_tokens", used.total_tokens),
        ):
            limit = getattr(self, name)
            if limit is not None and value >= limit:
                return f"{name}: {value} used, the limit is {limit}"
        return None


@dataclass(frozen=True)
class UsageBudget:
    """A request's limits: per turn, and per conversation (earlier stored turns counted too)."""

    per_turn: UsageLimits | None = None
    per_conversation: UsageLimits | None = None
