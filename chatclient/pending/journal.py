"""A resumed turn's journal in its pending store: where the turn's progress lives between rounds.

The paused state stays in its store until the turn completes; beside it the store keeps a
:class:`~chatclient.durable.JournalEntry`, moved by compare-and-set (:class:`JournaledStore`).
A resume claims the journal before each tool batch (``running``, the batch's call ids named),
records the batch's results before the next model round (``recorded``), and ends it by taking the
state (the journal goes with it). Every write is made at the version the resume last wrote, so of two resumes
of one state exactly one goes on; the other is refused before it runs anything.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable
from dataclasses import dataclass, field

from ..durable import JournalEntry, JournalSlot, TurnProgress, decisions_digest
from ..errors import ToolCallDecisionError, TurnInProgressError
from ..tools.confirmation import ToolCallDecisions
from .state import StoredPendingToolCalls

__all__ = ["TurnJournal", "check_retry", "read_journal"]


def read_journal(stored: StoredPendingToolCalls) -> tuple[int, str | None] | Awaitable[tuple[int, str | None]]:
    """The journal's ``(version, entry text)``; awaitable for an async store."""
    return stored.aprogress() if stored.is_async else stored.progress()


def check_retry(entry: JournalEntry | None, decisions: ToolCallDecisions, after_crash: bool) -> None:
    """Refuse, before anything runs, a resume that cannot go on from ``entry``."""
    if entry is None or entry.status == "released":
        return
    if entry.status == "completed":
        raise TurnInProgressError("This paused turn already completed; nothing ran")
    if entry.decisions != decisions_digest(decisions):
        raise ToolCallDecisionError(
            "This paused turn is under way with other decisions: a retry must bring the same ones; nothing ran"
        )
    if entry.status == "running" and not after_crash:
        raise TurnInProgressError(
            "Another resume of this paused turn is running its tools (or its process stopped before their "
            "results were recorded); nothing ran. If that process is gone, resume with after_crash=True"
        )


@dataclass
class TurnJournal:
    """The running resume's hold on its state's journal: the version it last wrote. A memory-backed
    turn holds its conversation's journal slot the same way (``stored`` is then that slot)."""

    stored: StoredPendingToolCalls | JournalSlot
    decisions: ToolCallDecisions
    digest: str
    version: int
    token: str = field(default_factory=lambda: secrets.token_hex(8))

    def write(self, entry: JournalEntry) -> bool | Awaitable[bool]:
        """Compare-and-set at :attr:`version`; pass the answer to :meth:`landed`."""
        text = entry.dump()
        stored = self.stored
        return (
            stored.arecord_progress(self.version, text)
            if stored.is_async
            else stored.record_progress(self.version, text)
        )

    @property
    def in_conversation(self) -> bool:
        """A memory-backed turn's journal (not a pending state's): the memory advisor clears it."""
        return not isinstance(self.stored, StoredPendingToolCalls)

    def landed(self, ok: bool, doing: str) -> None:
        if not ok:
            if self.in_conversation:
                raise TurnInProgressError(
                    f"This turn's journal moved while this continuation was {doing}: another continuation took "
                    "it over, or the turn completed or was abandoned; this one stops here"
                )
            raise TurnInProgressError(
                f"Another resume of this paused turn took it over while this one was {doing}; "
                "this one stops here (the other carries the turn on)"
            )
        self.version += 1

    def running(self, call_ids: tuple[str, ...], progress: TurnProgress | None = None) -> JournalEntry:
        """``progress``: the turn up to the reply that asked for the calls (a memory-backed turn keeps
        it, since no paused state holds that reply)."""
        return JournalEntry(status="running", decisions=self.digest, progress=progress, started=call_ids, by=self.token)

    def released(self) -> JournalEntry:
        """Nothing ran after all (the decisions were refused): the state may be resumed afresh."""
        return JournalEntry(status="released", decisions="", by=self.token)

    def recorded(self, progress: TurnProgress) -> JournalEntry:
        return JournalEntry(status="recorded", decisions=self.digest, progress=progress, by=self.token)

    def stopped(self, progress: TurnProgress) -> JournalEntry:
        """A memory-backed turn's runner lets go of its recorded progress (its model round failed)."""
        return JournalEntry(status="stopped", decisions=self.digest, progress=progress, by=self.token)
