"""The session log in an SQLite file: the embedded default, no server, shared by the processes of
one machine. WAL mode; an append is one transaction holding the write lock from its start, so
concurrent writers (threads or processes) queue and each sees the version the one before it left.
A new turn on a session this store has seen is a single statement (SQLite runs it as its own
transaction: no ``BEGIN``/``COMMIT`` round, and the version is the log's last seq, so no session-row
write); anything else (a new session, a replay, a conflict) runs in ``BEGIN IMMEDIATE``. The tables'
shape is recorded per prefix and a file made by older code is migrated when the store opens it
(:meth:`SessionSql.schema <._sql.SessionSql.schema>`).

Stored events never change, so the repository keeps the tail of each recent session's log in
memory: an append adds its own events to it, and a windowed read only fetches the events written
since (by any process); the session's creation time tells a deleted and re-created session from the
one cached. When SQLite's ``PRAGMA data_version`` says no other connection (thread or process) has
committed since the tail was last checked on this connection, the read is served from the tail
without a query.

``synchronous=NORMAL`` with WAL: a commit is atomic and survives a crash of the process; a power
loss may lose the last transactions before a checkpoint, never half of one (the usual choice for
an embedded store; a turn is then lost whole or kept whole). WAL checkpoints run in a background
thread of the store, not in the request that crosses SQLite's threshold
(:mod:`chatclient._storage.checkpoint`). The connections come from the SQLite connection manager
the pending stores use too (:class:`~chatclient._storage.sqlite.SqliteDatabase`)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._storage.sqlite import SqliteDatabase, Stamp
from ._sql import SQLITE, SessionSql
from .expiry import Session, check_ttl, session_of, session_to_create
from .log import AppendResult, NewEvent, SessionEvent, check_session_id, plan_append
from .repository import ThreadedSessionRepository

__all__ = ["AsyncSqliteSessionRepository", "SqliteSessionRepository"]

_KNOWN_SESSIONS = 4096
_tuple_new = tuple.__new__


@dataclass(slots=True)
class _Tail:
    """The newest events of one session, contiguous up to the last one read (empty: an empty log).

    ``checked``: the stamp at which the tail was known to end where the log ends; while the same
    connection reads the same data version, nobody else wrote and this connection's own appends
    are in the tail."""

    created_at: float
    events: list[SessionEvent]
    checked: Stamp | None = None

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0


class _TailCache:
    """Recent sessions' tails (``sessions`` of them, up to ``events`` events each), thread-safe."""

    def __init__(self, sessions: int = 1024, events: int = 4096, ends: int = 4096) -> None:
        self._tails: OrderedDict[str, _Tail] = OrderedDict()
        self._sessions, self._events = sessions, events
        self._ends: OrderedDict[str, tuple[float, int]] = OrderedDict()
        """Per recent session: its creation time and the last seq this store appended (no events
        kept: a session only written to costs no memory beyond this)."""
        self._most_ends = ends
        self._lock = threading.Lock()

    def last_seq(self, session_id: str) -> int | None:
        """The last seq of the session's tail (a read asks for the events after it)."""
        with self._lock:
            tail = self._tails.get(session_id)
            return tail.last_seq if tail is not None else None

    def known_end(self, session_id: str, created_at: float) -> int | None:
        """The last seq this store knows of the session created at ``created_at``: the later of
        its tail's and its last append's (both were in the log, and the log only grows)."""
        with self._lock:
            best = None
            tail, end = self._tails.get(session_id), self._ends.get(session_id)
            if tail is not None and tail.created_at == created_at:
                best = tail.last_seq
            if end is not None and end[0] == created_at and (best is None or end[1] > best):
                best = end[1]
            return best

    def put(self, session_id: str, tail: _Tail) -> None:
        with self._lock:
            self._store(session_id, tail)

    def _store(self, session_id: str, tail: _Tail) -> None:
        del tail.events[: -self._events]
        self._tails[session_id] = tail
        self._tails.move_to_end(session_id)
        while len(self._tails) > self._sessions:
            self._tails.popitem(last=False)

    def read(
        self,
        session_id: str,
        created_at: float | None,
        new: list[SessionEvent],
        after_seq: int,
        last: int | None,
        stamp: Stamp | None = None,
    ) -> list[SessionEvent] | None:
        """Extend the tail with ``new`` (read after it, at ``stamp`` or later) and answer from it;
        ``None`` when the tail is gone, belongs to a deleted session, or does not reach back far enough."""
        with self._lock:
            tail = self._tails.get(session_id)
            if tail is None or created_at != tail.created_at:
                self._tails.pop(session_id, None)
                return None
            tail.events.extend(e for e in new if e.seq > tail.last_seq)  # a racing reader may have added some
            tail.checked = stamp
            self._store(session_id, tail)
            return _from_tail(tail.events, after_seq, last)

    def current(self, session_id: str, stamp: Stamp, after_seq: int, last: int | None) -> list[SessionEvent] | None:
        """The answer from the tail when it was checked at ``stamp`` (nothing written since), else ``None``."""
        with self._lock:
            tail = self._tails.get(session_id)
            if tail is None or tail.checked != stamp:
                return None
            self._tails.move_to_end(session_id)
            return _from_tail(tail.events, after_seq, last)

    def unstamp(self, session_id: str, connection: int) -> Stamp | None:
        """Before ``connection`` appends: its stamp on the tail could hide that append; take it off."""
        with self._lock:
            tail = self._tails.get(session_id)
            if tail is None or tail.checked is None or tail.checked[0] != connection:
                return None
            held, tail.checked = tail.checked, None
            return held

    def appended(self, session_id: str, created_at: float, events: list[SessionEvent], held: Stamp | None) -> None:
        """Note the append's last seq (the next append numbers after it), and add its events to the
        tail when they follow it (the stamp taken off before goes back on); otherwise the tail stays
        as it was, unstamped, and the next read asks."""
        with self._lock:
            self._ends[session_id] = (created_at, events[-1].seq)
            self._ends.move_to_end(session_id)
            while len(self._ends) > self._most_ends:
                self._ends.popitem(last=False)
            tail = self._tails.get(session_id)
            if tail is None or tail.created_at != created_at or tail.last_seq != events[0].seq - 1:
                return
            tail.events.extend(events)
            if held is not None and tail.checked is None:
                tail.checked = held
            self._store(session_id, tail)

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._tails.pop(session_id, None)


class SqliteSessionRepository:
    """Sessions in the SQLite file ``path``; tables ``{prefix}session`` and ``{prefix}session_event``.

    ``checkpoint_every``: this store's commits between two WAL checkpoints, run by its background
    thread (``None``: SQLite's automatic checkpoint, inside the committing request)."""

    def __init__(
        self,
        path: str | Path,
        *,
        prefix: str = "chatclient_",
        clock: Callable[[], float] = time.time,
        checkpoint_every: int | None = 200,
        ttl: float | None = None,
    ):
        self.ttl = check_ttl(ttl)
        self._sql = SessionSql(prefix, SQLITE)
        self._db = SqliteDatabase(path, synchronous="NORMAL", checkpoint_every=checkpoint_every)
        self._clock = clock
        self._db.write(self._sql.all_schema())
        self._tails = _TailCache()
        self._created: dict[str, float] = {}
        """Sessions' creation times as this process last saw them (an append on one of them skips the
        session row); bounded, oldest dropped first. A stale entry only costs the careful path."""
        self._created_lock = threading.Lock()

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        check_session_id(session_id)
        held = self._tails.unstamp(session_id, self._db.number())
        now = self._clock()
        known = self._created.get(session_id)
        base = self._tails.known_end(session_id, known) if events and known is not None and self.ttl is None else None
        written = None
        if base is not None and known is not None and (expected_version is None or expected_version == base):
            # A new turn on a session this store has seen, after the last seq it saw: one statement.
            plan_append(session_id, events, {}, 0, None)  # refuses an id twice in the batch
            written = self._db.write_one(self._sql.new_turn(session_id, events, base, now, known))
        if base is not None and known is not None and written == len(events):
            result, created_at = AppendResult(base + len(events), len(events), 0), known
        else:  # nothing was written: a new or re-created session, a replay, a conflict, an expiring store
            if self.ttl is not None:
                result, created_at = self._append_expiring(session_id, events, expected_version, now, self.ttl)
            else:
                result, created_at = self._db.write(self._sql.append_sqlite(session_id, events, expected_version, now))
            if created_at != known:
                self._saw(session_id, created_at)
        if events and result.appended == len(events):  # committed, numbered from the version before
            first = result.version - len(events) + 1
            new = _tuple_new  # the record straight from its values (no NamedTuple.__new__ frame)
            stored = [
                new(SessionEvent, (session_id, seq, event_id, turn_id, kind, payload, now))
                for seq, (event_id, turn_id, payload, kind) in enumerate(events, first)
            ]
            self._tails.appended(session_id, created_at, stored, held)
        return result

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        check_session_id(session_id)
        if self.ttl is not None:
            return self._live(session_id, self._events(session_id, after_seq, last, types), types)
        return self._events(session_id, after_seq, last, types)

    def _events(
        self, session_id: str, after_seq: int, last: int | None, types: Sequence[str] | None
    ) -> list[SessionEvent]:
        if types is not None:
            return self._db.read(self._sql.events(session_id, after_seq, last, types))
        stamp = self._db.stamp()  # before any read: what commits after it changes the data version
        cached = self._tails.current(session_id, stamp, after_seq, last)
        if cached is not None:
            return cached
        seen = self._tails.last_seq(session_id)
        if seen is not None:
            created_at, new = self._db.read(self._sql.tail(session_id, seen))
            cached = self._tails.read(session_id, created_at, new, after_seq, last, stamp)
            if cached is not None:
                return cached
        created_at, events = self._db.read_consistent(self._sql.events_of_session(session_id, after_seq, last))
        if created_at is None:
            self._tails.drop(session_id)
        elif (events and (last is not None or after_seq == 0)) or (not events and after_seq == 0):
            self._tails.put(session_id, _Tail(created_at, list(events), stamp))  # a suffix of the log: cacheable
        return events

    def _saw(self, session_id: str, created_at: float) -> None:
        with self._created_lock:
            created = self._created
            created.pop(session_id, None)
            while len(created) >= _KNOWN_SESSIONS:
                del created[next(iter(created))]
            created[session_id] = created_at

    def version(self, session_id: str) -> int:
        check_session_id(session_id)
        if self.ttl is not None and self._db.read(self._sql.expired(session_id, self.ttl, self._clock())):
            return 0
        return self._db.read(self._sql.version(session_id))

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        self._tails.drop(session_id)
        self._created.pop(session_id, None)
        self._db.write(self._sql.delete_session(session_id))

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        check_session_id(session_id)
        return self._db.write(self._sql.try_lease(session_id, token, ttl, self._clock()))

    def release_lease(self, session_id: str, token: str) -> bool:
        check_session_id(session_id)
        return self._db.write(self._sql.release_lease(session_id, token))

    def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        return self._db.read(self._sql.journals(check_session_id(session_id), self.ttl, self._clock()))

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        check_session_id(session_id)
        write = self._sql.write_journal(session_id, turn_id, version, entry, self.ttl, self._clock())
        landed, reset = self._db.write(write)
        if reset:  # the expired log is gone: so is its cached tail
            self._tails.drop(session_id)
            self._created.pop(session_id, None)
        return landed

    def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        self._db.write(self._sql.journal.clear(check_session_id(session_id), turn_id))

    def close(self) -> None:
        """Close every thread's connection and stop the checkpoint thread (a later call opens them again)."""
        self._db.close()

    # ------------------------------------------------------------------ expiry and pruning

    def _append_expiring(
        self, session_id: str, events: Sequence[NewEvent], expected_version: int | None, now: float, ttl: float
    ) -> tuple[AppendResult, float]:
        """The write of an append that starts an expired session afresh (one transaction; the
        cached tail of the old log is dropped)."""
        result, created_at, reset = self._db.write(
            self._sql.append_expiring(session_id, events, expected_version, now, ttl)
        )
        if reset:
            self._tails.drop(session_id)
        return result, created_at

    def _live(self, session_id: str, events: list[SessionEvent], types: Sequence[str] | None) -> list[SessionEvent]:
        """``events``, or ``[]`` once the session expired (by its own ttl or the repository's: one
        lookup by key)."""
        gone: bool = bool(events) and self._db.read(self._sql.expired(session_id, self.ttl, self._clock()))
        return [] if gone else events

    def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, ttl, text = session_to_create(session_id, ttl, metadata, self.ttl)
        self._tails.drop(session_id)  # an expired log it replaces may be cached
        created_at, own, stored = self._db.write(self._sql.create(session_id, ttl, text, self._clock(), self.ttl))
        return session_of(session_id, created_at, own, stored)

    def get(self, session_id: str) -> Session | None:
        found = self._db.read(self._sql.get(check_session_id(session_id), self.ttl, self._clock()))
        return None if found is None else session_of(session_id, *found)

    def delete_expired(self, now: float | None = None) -> int:
        gone = self._db.write(self._sql.delete_expired(self.ttl, self._clock() if now is None else now))
        for session_id in gone:
            self._tails.drop(session_id)
        return len(gone)

    def prune(self, session_id: str, below_seq: int) -> int:
        check_session_id(session_id)
        self._tails.drop(session_id)  # the tail may hold pruned events
        return self._db.write(self._sql.prune(session_id, below_seq, self.ttl, self._clock()))


def _from_tail(events: list[SessionEvent], after_seq: int, last: int | None) -> list[SessionEvent] | None:
    """The answer to ``events(after_seq=, last=)`` from a cached tail, or ``None`` if it reaches
    further back than the tail does."""
    if not events:
        return []  # only an empty log is cached empty
    version, first = events[-1].seq, events[0].seq
    start = after_seq + 1 if last is None else max(after_seq + 1, version - last + 1)
    if start < first and first > 1:
        return None
    return events[max(start - first, 0) :]


class AsyncSqliteSessionRepository(ThreadedSessionRepository):
    """The async face: each operation of :class:`SqliteSessionRepository` runs in a worker thread."""

    sync: SqliteSessionRepository

    def __init__(
        self,
        path: str | Path,
        *,
        prefix: str = "chatclient_",
        clock: Callable[[], float] = time.time,
        checkpoint_every: int | None = 200,
        ttl: float | None = None,
    ):
        super().__init__(
            SqliteSessionRepository(path, prefix=prefix, clock=clock, checkpoint_every=checkpoint_every, ttl=ttl)
        )
