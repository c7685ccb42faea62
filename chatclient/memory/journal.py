"""The turn journal of a memory-backed conversation: where a turn's tool rounds are recorded while it
runs, so a turn that stopped in its middle (a failed model round, a request whose error object is
gone, a process killed) is continued, never restarted.

The tool loop writes a turn's journal only when the turn has a tool round: before a batch runs it
claims the journal (``running``, naming the calls and keeping the reply that asked for them), and
before the next model round it records the results (``recorded``). Each write is a compare-and-set
on the ``(conversation, turn)`` journal (:mod:`chatclient.memory._journal_store`), so of two
continuations one goes on. When the turn completes, the memory advisor writes it to the log (once,
whole, with its turn id's event ids) and then clears its journal: write-then-clear, idempotent by
turn id, so a crash between the two leaves a journal whose continuation finds the turn stored.

A new turn with tools, while another turn of the conversation stopped unfinished, is refused before
its first model round (:class:`UnfinishedTurnError`: one read of the journals, only for a request with
tools), unless the advisor was made with ``unfinished_turns="allow"``. A turn whose journal is still
held (``running``/``recorded``) may be running right now in another request, as ``concurrency=
"append"`` allows: it refuses new turns only under ``concurrency="serialize"``, whose lease rules
that out. Continue the unfinished one
with ``client.prompt().continue_turn(memory.unfinished_turn(cid))``, or drop it with
``memory.abandon_turn(cid, turn_id)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..durable import JournalEntry, TurnContinuation
from ..errors import TurnInProgressError

__all__ = [
    "AsyncTurnJournalStore",
    "ConversationJournals",
    "TurnJournalStore",
    "UnfinishedTurnError",
    "UnfinishedTurns",
    "unfinished_of",
]

UnfinishedTurns = Literal["raise", "allow"]
"""What a new turn's first tool round does while another turn of its conversation is unfinished:
``raise`` (:class:`UnfinishedTurnError`, nothing ran) or ``allow`` (both stay continuable)."""

_OPEN = ("running", "recorded", "stopped")


@runtime_checkable
class TurnJournalStore(Protocol):
    """A session repository that keeps turn journals (every built-in one)."""

    def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]: ...

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool: ...

    def clear_turn_journal(self, session_id: str, turn_id: str) -> None: ...


@runtime_checkable
class AsyncTurnJournalStore(Protocol):
    """The async face of :class:`TurnJournalStore`."""

    async def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]: ...

    async def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool: ...

    async def clear_turn_journal(self, session_id: str, turn_id: str) -> None: ...


class UnfinishedTurnError(TurnInProgressError):
    """A turn of this conversation stopped after tools ran and was neither continued nor abandoned;
    a new turn's tool round was refused before anything ran. ``turn_id``/``status`` name it."""

    def __init__(self, conversation_id: str, turn_id: str, status: str) -> None:
        state = {
            "running": "its process stopped while its tools ran: pass after_crash=True to unfinished_turn",
            "recorded": "its process stopped after its tools' results were recorded: pass after_crash=True",
        }.get(status, "its tools' results are kept")
        super().__init__(
            f"Conversation {conversation_id!r} has an unfinished turn {turn_id!r} ({state}); nothing of this "
            "turn ran. Finish it with client.prompt().continue_turn(memory.unfinished_turn(conversation_id)) "
            "or drop it with memory.abandon_turn(conversation_id, turn_id)"
        )
        self.conversation_id, self.turn_id, self.status = conversation_id, turn_id, status


def unfinished_of(journals: list[tuple[str, int, str]]) -> list[tuple[str, int, JournalEntry]]:
    """The unfinished turns among a conversation's journals (``running`` or ``recorded``)."""
    found = []
    for turn_id, version, text in journals:
        entry = JournalEntry.load(text)
        if entry.status in _OPEN:
            found.append((turn_id, version, entry))
    return found


def continuation_of(
    conversation_id: str, turn_id: str, version: int, entry: JournalEntry, after_crash: bool
) -> TurnContinuation:
    """How to finish an unfinished turn. A ``stopped`` one is free; a ``running`` or ``recorded`` one is
    held by a process that may still be running it (its tools, or the model round after them), so it
    is taken over only ``after_crash`` (never re-run silently)."""
    if entry.status == "running" and not after_crash:
        raise TurnInProgressError(
            f"Turn {turn_id!r} of conversation {conversation_id!r} is running its tools (or its process stopped "
            "before their results were recorded); nothing ran. If that process is gone, pass after_crash=True: "
            "the calls it started are reported to the model as of unknown outcome (an idempotent tool runs again)"
        )
    if entry.status == "recorded" and not after_crash:
        raise TurnInProgressError(
            f"Turn {turn_id!r} of conversation {conversation_id!r} is sending the model round after its recorded "
            "tool results (or its process stopped there); nothing ran. If that process is gone, pass "
            "after_crash=True: the turn goes on from the recorded results, no tool runs again"
        )
    assert entry.progress is not None
    started = entry.started if entry.status == "running" else ()
    return TurnContinuation(entry.progress, conversation_id, journal_version=version, started=started)


@dataclass
class _Slot:
    """One turn's journal in the conversation's store: what :class:`~chatclient.pending.journal.TurnJournal`
    writes through."""

    store: Any
    conversation_id: str
    turn_id: str
    is_async: bool

    def record_progress(self, version: int, entry: str) -> bool:
        return bool(self.store.write_turn_journal(self.conversation_id, self.turn_id, version, entry))

    async def arecord_progress(self, version: int, entry: str) -> bool:
        return bool(await self.store.write_turn_journal(self.conversation_id, self.turn_id, version, entry))


@dataclass
class ConversationJournals:
    """A request's view of its conversation's journals, handed to the tool loop. ``opened``: a turn
    of this request wrote its journal (the advisor clears it once the turn is stored)."""

    store: Any
    conversation_id: str
    is_async: bool
    unfinished: UnfinishedTurns = "raise"
    blocking: tuple[str, ...] = ("stopped",)
    """The journal states that refuse a new turn: ``stopped`` (nobody runs that turn) always; under
    ``concurrency="serialize"`` also ``running``/``recorded`` (the lease rules out a live runner)."""
    opened: bool = False
    checked: bool = False
    """A new turn found no other unfinished one before its first model round (:meth:`check`)."""

    def slot(self, turn_id: str) -> _Slot:
        self.opened = True
        return _Slot(self.store, self.conversation_id, turn_id, self.is_async)

    def check(self) -> Awaitable[None] | None:
        """Refuse a new turn, before its first model round, while another turn is unfinished (one
        read, only for a request with tools under ``unfinished_turns="raise"``)."""
        if self.unfinished != "raise":
            return None
        if self.is_async:
            return self._acheck()
        self._refuse(self.store.turn_journals(self.conversation_id))
        return None

    async def _acheck(self) -> None:
        self._refuse(await self.store.turn_journals(self.conversation_id))

    def _refuse(self, journals: list[tuple[str, int, str]]) -> None:
        for other, _, entry in unfinished_of(journals):
            if entry.status in self.blocking:
                raise UnfinishedTurnError(self.conversation_id, other, entry.status)
        self.checked = True

    def open(self, turn_id: str) -> tuple[_Slot, int] | Awaitable[tuple[_Slot, int]]:
        if self.checked:  # a new turn checked before its first round: its journal is new
            return self.slot(turn_id), 0
        if self.is_async:
            return self._aopen(turn_id)
        return self._opened(turn_id, self.store.turn_journals(self.conversation_id))

    async def _aopen(self, turn_id: str) -> tuple[_Slot, int]:
        return self._opened(turn_id, await self.store.turn_journals(self.conversation_id))

    def _opened(self, turn_id: str, journals: list[tuple[str, int, str]]) -> tuple[_Slot, int]:
        version = 0
        for other, at, entry in unfinished_of(journals):
            if other == turn_id:
                version = at
            elif self.unfinished == "raise" and entry.status in self.blocking:
                raise UnfinishedTurnError(self.conversation_id, other, entry.status)
        for other, at, _ in journals:  # a released journal of this turn: written over at its version
            if other == turn_id:
                version = at
        return self.slot(turn_id), version

    def clear(self, turn_id: str) -> Awaitable[None] | None:
        result: Awaitable[None] | None = self.store.clear_turn_journal(self.conversation_id, turn_id)
        return result if inspect.isawaitable(result) else None
