"""The repository protocols (sync and async, same method names) and the in-memory backend.

Every backend gives the same guarantees (the contract suite in :mod:`chatclient.testing.memory`
checks them): an append is all-or-nothing and idempotent by event id; ``seq`` is gap-free and the
version is the last ``seq``; an unknown session reads as empty.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Protocol, TypeVar, runtime_checkable

from .._storage.threads import in_thread
from ._journal_store import InMemoryTurnJournals
from .expiry import Session, check_ttl, expired, prune_limit, session_to_create
from .log import AppendResult, NewEvent, SessionEvent, VersionConflict, check_session_id, plan_append

__all__ = [
    "AsyncInMemorySessionRepository",
    "AsyncSessionRepository",
    "InMemorySessionRepository",
    "SessionRepository",
    "ThreadedSessionRepository",
    "in_thread",
]

T = TypeVar("T")
_tuple_new = tuple.__new__  # a record straight from its values (no NamedTuple.__new__ frame)
_event_id = itemgetter(0)  # NewEvent.event_id


@runtime_checkable
class SessionRepository(Protocol):
    """One append-only log of events per session."""

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        """Append all of ``events`` or none (``VersionConflict``, ``IdempotencyMismatch``)."""
        ...

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        """Oldest first: the events after ``after_seq`` (of the given ``types``), or only the ``last`` ones."""
        ...

    def version(self, session_id: str) -> int:
        """The last ``seq`` (0 for an empty or unknown session)."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove the session and all its events."""
        ...

    def delete_expired(self, now: float | None = None) -> int:
        """Remove every session idle for longer than its ``ttl``, and the leases whose holders never
        released them (with or without a ``ttl``); how many sessions went."""
        ...

    def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        """The session ``session_id`` (a random id when ``None``), created with its own ``ttl``
        and ``metadata`` unless it was created before (then it is returned unchanged)."""
        ...

    def get(self, session_id: str) -> Session | None:
        """The session, or ``None`` when it is unknown or expired."""
        ...

    def prune(self, session_id: str, below_seq: int) -> int:
        """Remove the events below ``below_seq`` (never past the latest compaction boundary's
        first kept event); how many went."""
        ...


@runtime_checkable
class AsyncSessionRepository(Protocol):
    """:class:`SessionRepository` for asyncio: the same methods, awaited."""

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult: ...

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]: ...

    async def version(self, session_id: str) -> int: ...

    async def delete(self, session_id: str) -> None: ...

    async def delete_expired(self, now: float | None = None) -> int: ...

    async def prune(self, session_id: str, below_seq: int) -> int: ...

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session: ...

    async def get(self, session_id: str) -> Session | None: ...


def select(
    events: list[SessionEvent], after_seq: int, last: int | None, types: Sequence[str] | None = None, base: int = 0
) -> list[SessionEvent]:
    """The part of a session's events that ``events(after_seq=..., last=..., types=...)`` returns
    (``events`` start after ``base``: the events pruned from its head)."""
    chosen = events[after_seq - base :] if after_seq > base else events
    if types is not None:
        chosen = [e for e in chosen if e.type in types]
    return chosen[-last:] if last is not None and last < len(chosen) else list(chosen)


class InMemorySessionRepository:
    """Sessions in a dict, for one process (tests, prototypes). Thread-safe.

    ``ttl``: seconds after its last append at which a session expires (``None``: never);
    see :mod:`chatclient.memory.expiry`."""

    def __init__(self, clock: Callable[[], float] = time.time, *, ttl: float | None = None) -> None:
        self._clock, self.ttl = clock, check_ttl(ttl)
        self._logs: dict[str, list[SessionEvent]] = {}
        self._ids: dict[str, dict[str, str]] = {}
        self._base: dict[str, int] = {}  # events pruned from the head of each log
        self._sessions: dict[str, Session] = {}  # the created ones
        self._leases: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._journals = InMemoryTurnJournals()

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        if type(session_id) is not str:  # refused before it is used as a key
            check_session_id(session_id)
        lock = self._lock
        lock.acquire()  # not ``with``: acquire/release in try/finally is half its cost, on every turn
        try:
            now = self._clock()
            if self.ttl is not None and self._expired(session_id, now):  # not resumed: the session starts afresh
                self._forget(session_id)
            log = self._logs.get(session_id)
            if log is None:  # a known log's id was checked when it was made
                check_session_id(session_id)
                log, ids = self._logs[session_id], self._ids[session_id] = [], {}
            else:
                ids = self._ids[session_id]
            seq = self._base.get(session_id, 0) + len(log)
            batch = set(map(_event_id, events))
            if len(batch) == len(events) and ids.keys().isdisjoint(batch):  # a new turn: plan_append's
                if events and expected_version is not None and expected_version != seq:  # fast path, inline
                    raise VersionConflict(session_id, expected_version, seq)
                fresh = events
            else:  # replays or a repeated id: compared one by one
                fresh = plan_append(session_id, events, ids, seq, expected_version)
            new, add, start = _tuple_new, log.append, len(log)
            try:
                for event_id, turn_id, payload, kind in fresh:  # NewEvent's fields, in order
                    seq += 1
                    add(new(SessionEvent, (session_id, seq, event_id, turn_id, kind, payload, now)))
                    ids[event_id] = payload
            except BaseException:  # a malformed event part-way: the batch is all or nothing
                for event in log[start:]:
                    ids.pop(event.event_id, None)
                del log[start:]
                raise
            return new(AppendResult, (seq, len(fresh), len(events) - len(fresh)))
        finally:
            lock.release()

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        if type(session_id) is not str or session_id not in self._logs:  # a known log's id was checked
            check_session_id(session_id)
        lock = self._lock
        lock.acquire()  # as in append(): cheaper than ``with`` on every turn
        try:
            if self.ttl is not None and self._expired(session_id, self._clock()):
                return []
            log = self._logs.get(session_id)
            if log is None:
                return []
            if not after_seq and types is None and last is not None and 0 < last < len(log):
                return log[-last:]  # the windowed read: select()'s answer without its call
            return select(log, after_seq, last, types, self._base.get(session_id, 0))
        finally:
            lock.release()

    def version(self, session_id: str) -> int:
        check_session_id(session_id)
        with self._lock:
            if self.ttl is not None and self._expired(session_id, self._clock()):
                return 0
            return self._base.get(session_id, 0) + len(self._logs.get(session_id, ()))

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        with self._lock:
            self._forget(session_id)

    def delete_expired(self, now: float | None = None) -> int:
        with self._lock:
            at = self._clock() if now is None else now
            gone = [s for s in {**self._logs, **self._sessions} if self._expired(s, at)]
            for session_id in gone:
                self._forget(session_id)
            return len(gone)

    def prune(self, session_id: str, below_seq: int) -> int:
        check_session_id(session_id)
        with self._lock:
            log = [] if self._expired(session_id, self._clock()) else self._logs.get(session_id, [])
            limit = prune_limit(session_id, below_seq, [e for e in log if e.type == "compaction"][-1:])
            base = self._base.get(session_id, 0)
            cut = max(0, limit - 1 - base)
            ids = self._ids.get(session_id, {})
            for event in log[:cut]:
                ids.pop(event.event_id, None)
            del log[:cut]
            self._base[session_id] = base + cut
            return cut

    def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, ttl, text = session_to_create(session_id, ttl, metadata, self.ttl)
        with self._lock:
            now = self._clock()
            if self._expired(session_id, now):
                self._forget(session_id)
            known = self._sessions.get(session_id)
            if known is None:  # new, or only a log so far (its first event dates it)
                log = self._logs.get(session_id)
                created_at = log[0].created_at if log else now
                known = self._sessions[session_id] = Session(session_id, created_at, ttl, json.loads(text))
            return known

    def get(self, session_id: str) -> Session | None:
        check_session_id(session_id)
        with self._lock:
            return None if self._expired(session_id, self._clock()) else self._session(session_id)

    def _session(self, session_id: str) -> Session | None:
        known = self._sessions.get(session_id)
        log = self._logs.get(session_id)
        if known is None and log:
            return Session(session_id, log[0].created_at)
        return known

    def _expired(self, session_id: str, now: float) -> bool:
        known, log = self._sessions.get(session_id), self._logs.get(session_id)
        ttl = known.ttl if known is not None and known.ttl is not None else self.ttl
        last = log[-1].created_at if log else (known.created_at if known is not None else None)
        return expired(last, ttl, now)

    def _forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._logs.pop(session_id, None)
        self._ids.pop(session_id, None)
        self._base.pop(session_id, None)
        self._journals.forget(session_id)  # its turns' journals go with it

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        check_session_id(session_id)
        with self._lock:
            held, now = self._leases.get(session_id), self._clock()
            if held is not None and held[0] != token and held[1] > now:
                return False
            self._leases[session_id] = (token, now + ttl)
            return True

    def release_lease(self, session_id: str, token: str) -> bool:
        check_session_id(session_id)
        with self._lock:
            held = self._leases.get(session_id)
            if held is None or held[0] != token:
                return False
            del self._leases[session_id]
            return True

    # The turn journals of memory-backed turns (chatclient.memory.journal), beside the logs.

    # They expire with their session: an expired one's are never listed, and a write to one starts it
    # afresh first (as an append does), so a new turn's journal is not hidden by the old session.

    def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        check_session_id(session_id)
        with self._lock:
            if self.ttl is not None and self._expired(session_id, self._clock()):
                return []
            return self._journals.list(session_id)

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        check_session_id(session_id)
        with self._lock:
            if self.ttl is not None and self._expired(session_id, self._clock()):
                self._forget(session_id)
            return self._journals.write(session_id, turn_id, version, entry)

    def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        self._journals.clear(check_session_id(session_id), turn_id)


class AsyncInMemorySessionRepository:
    """The async face of :class:`InMemorySessionRepository` (its operations never block)."""

    def __init__(self, repository: InMemorySessionRepository | None = None) -> None:
        self.sync = repository if repository is not None else InMemorySessionRepository()

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        return self.sync.append(session_id, events, expected_version=expected_version)

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        return self.sync.events(session_id, after_seq=after_seq, last=last, types=types)

    async def version(self, session_id: str) -> int:
        return self.sync.version(session_id)

    async def delete(self, session_id: str) -> None:
        self.sync.delete(session_id)

    async def delete_expired(self, now: float | None = None) -> int:
        return self.sync.delete_expired(now)

    async def prune(self, session_id: str, below_seq: int) -> int:
        return self.sync.prune(session_id, below_seq)

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        return self.sync.create(session_id, ttl=ttl, metadata=metadata)

    async def get(self, session_id: str) -> Session | None:
        return self.sync.get(session_id)

    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        return self.sync.try_lease(session_id, token, ttl)

    async def release_lease(self, session_id: str, token: str) -> bool:
        return self.sync.release_lease(session_id, token)

    async def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        return self.sync.turn_journals(session_id)

    async def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        return self.sync.write_turn_journal(session_id, turn_id, version, entry)

    async def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        self.sync.clear_turn_journal(session_id, turn_id)


class ThreadedSessionRepository:
    """A sync repository seen through the async protocol, each call in a worker thread (so a
    blocking store never blocks the event loop)."""

    def __init__(self, sync: SessionRepository) -> None:
        self.sync = sync

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        return await in_thread(lambda: self.sync.append(session_id, events, expected_version=expected_version))

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        return await in_thread(lambda: self.sync.events(session_id, after_seq=after_seq, last=last, types=types))

    async def version(self, session_id: str) -> int:
        return await in_thread(lambda: self.sync.version(session_id))

    async def delete(self, session_id: str) -> None:
        await in_thread(lambda: self.sync.delete(session_id))

    async def delete_expired(self, now: float | None = None) -> int:
        return await in_thread(lambda: self.sync.delete_expired(now))

    async def prune(self, session_id: str, below_seq: int) -> int:
        return await in_thread(lambda: self.sync.prune(session_id, below_seq))

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        return await in_thread(lambda: self.sync.create(session_id, ttl=ttl, metadata=metadata))

    async def get(self, session_id: str) -> Session | None:
        return await in_thread(lambda: self.sync.get(session_id))

    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        lease: Any = self.sync  # checked by the advisor (SessionLease)
        return bool(await in_thread(lambda: lease.try_lease(session_id, token, ttl)))

    async def release_lease(self, session_id: str, token: str) -> bool:
        lease: Any = self.sync
        return bool(await in_thread(lambda: lease.release_lease(session_id, token)))

    async def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        journals: Any = self.sync  # checked by the advisor (TurnJournalStore)
        found: list[tuple[str, int, str]] = await in_thread(lambda: journals.turn_journals(session_id))
        return found

    async def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        journals: Any = self.sync
        return bool(await in_thread(lambda: journals.write_turn_journal(session_id, turn_id, version, entry)))

    async def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        journals: Any = self.sync
        await in_thread(lambda: journals.clear_turn_journal(session_id, turn_id))
