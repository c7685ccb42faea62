"""The session log in PostgreSQL (``pip install "chatclient[postgres]"``: psycopg 3 with a pool).

An append is one transaction: the session row is created if absent (``ON CONFLICT DO NOTHING``,
so concurrent first appends cannot fail), locked (``FOR UPDATE``), and the new events are inserted
with the next numbers. Connections come from a ``psycopg_pool`` pool, one per operation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._storage.postgres import CONNECT_TIMEOUT, AsyncPool, arun_on, open_pool, require_psycopg, run_on
from .._storage.sql import Flow
from ._sql import POSTGRES, SessionSql
from .errors import SessionStoreError
from .expiry import Session, check_ttl, session_of, session_to_create
from .log import AppendResult, NewEvent, SessionEvent, check_session_id

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AsyncPostgresSessionRepository", "PostgresSessionRepository", "require_psycopg"]

T = TypeVar("T")


def _store_error(name: str) -> Callable[[str], SessionStoreError]:
    """The error a repository that cannot reach its server raises (the message says why)."""
    return lambda message: SessionStoreError(message, conversation_id="", backend=name)


class PostgresSessionRepository:
    """Sessions in PostgreSQL at ``url``; tables ``{prefix}session`` and ``{prefix}session_event``.

    Give ``pool`` to share a ``psycopg_pool.ConnectionPool``; otherwise one is opened (``close()``),
    which checks each connection before handing it out and gives up after ``connect_timeout`` seconds.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        prefix: str = "chatclient_",
        prepare_threshold: int | None = 5,
        clock: Callable[[], float] = time.time,
        ttl: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.ttl = check_ttl(ttl)
        self._own_pool = pool is None
        self._sql = SessionSql(prefix, POSTGRES)
        self._clock = clock
        self._pool: ConnectionPool[Any] = open_pool(
            url,
            pool,
            name=type(self).__name__,
            schema=self._sql.all_schema(),
            failed=_store_error(type(self).__name__),
            prepare_threshold=prepare_threshold,
            connect_timeout=connect_timeout,
        )

    def _run(self, flow: Flow[T], *, transaction: bool = True) -> T:
        with self._pool.connection() as conn:
            return run_on(conn, flow, transaction=transaction)

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        check_session_id(session_id)
        now = self._clock()
        if self.ttl is not None:  # an expired log is started afresh, in the append's transaction
            flow = self._sql.append_expiring(session_id, events, expected_version, now, self.ttl)
            return self._run(flow)[0]
        if events and expected_version is None:  # a new turn: one statement, one round trip
            from psycopg.errors import UniqueViolation

            with self._pool.connection() as conn:
                try:
                    return run_on(conn, self._sql.append_new(session_id, events, now), transaction=False)
                except UniqueViolation:  # an id is already stored (a replay): nothing was written
                    return run_on(conn, self._sql.append(session_id, events, expected_version, now))
        return self._run(self._sql.append(session_id, events, expected_version, now))

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        check_session_id(session_id)
        events = self._run(self._sql.events(session_id, after_seq, last, types), transaction=False)
        return [] if events and self._expired(session_id) else events

    def version(self, session_id: str) -> int:
        check_session_id(session_id)
        return 0 if self._expired(session_id) else self._run(self._sql.version(session_id), transaction=False)

    def _expired(self, session_id: str) -> bool:
        """By the server's clock; no statement without a ttl."""
        return self.ttl is not None and self._run(self._sql.expired(session_id, self.ttl, None), transaction=False)

    def delete_expired(self, now: float | None = None) -> int:
        """Sessions idle past the ttl by the server's clock (or ``now``, a Unix time), and leases run
        out, deleted."""
        return len(self._run(self._sql.delete_expired(self.ttl, now)))

    def prune(self, session_id: str, below_seq: int) -> int:
        return self._run(self._sql.prune(check_session_id(session_id), below_seq, self.ttl))

    def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, ttl, text = session_to_create(session_id, ttl, metadata, self.ttl)
        return session_of(session_id, *self._run(self._sql.create(session_id, ttl, text, self._clock(), self.ttl)))

    def get(self, session_id: str) -> Session | None:
        found = self._run(self._sql.get(check_session_id(session_id), self.ttl, None), transaction=False)
        return None if found is None else session_of(session_id, *found)

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        self._run(self._sql.delete_session(session_id))

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        check_session_id(session_id)
        return self._run(self._sql.try_lease(session_id, token, ttl, 0.0))

    def release_lease(self, session_id: str, token: str) -> bool:
        check_session_id(session_id)
        return self._run(self._sql.release_lease(session_id, token))

    def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        journals = self._sql.journals(check_session_id(session_id), self.ttl, None)
        return self._run(journals, transaction=False)

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        write = self._sql.write_journal(check_session_id(session_id), turn_id, version, entry, self.ttl, None)
        landed, _ = self._run(write)
        return landed

    def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        self._run(self._sql.journal.clear(check_session_id(session_id), turn_id))

    def close(self) -> None:
        if self._own_pool:
            self._pool.close()


class AsyncPostgresSessionRepository:
    """The async face, on a ``psycopg_pool.AsyncConnectionPool``; call ``await open()`` first
    (it creates the tables) and ``await close()`` at the end."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        prefix: str = "chatclient_",
        prepare_threshold: int | None = 5,
        clock: Callable[[], float] = time.time,
        ttl: float | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.ttl = check_ttl(ttl)
        self._sql = SessionSql(prefix, POSTGRES)
        self._clock = clock
        self._db = AsyncPool(
            url,
            pool,
            name=type(self).__name__,
            schema=self._sql.all_schema,
            failed=_store_error(type(self).__name__),
            prepare_threshold=prepare_threshold,
            connect_timeout=connect_timeout,
        )

    async def open(self) -> None:
        await self._db.open()

    async def _run(self, flow: Flow[T], *, transaction: bool = True) -> T:
        async with self._db.connection() as conn:
            return await arun_on(conn, flow, transaction=transaction)

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        check_session_id(session_id)
        now = self._clock()
        if self.ttl is not None:  # an expired log is started afresh, in the append's transaction
            flow = self._sql.append_expiring(session_id, events, expected_version, now, self.ttl)
            return (await self._run(flow))[0]
        if events and expected_version is None:  # a new turn: one statement, one round trip
            from psycopg.errors import UniqueViolation

            async with self._db.connection() as conn:
                try:
                    return await arun_on(conn, self._sql.append_new(session_id, events, now), transaction=False)
                except UniqueViolation:  # an id is already stored (a replay): nothing was written
                    return await arun_on(conn, self._sql.append(session_id, events, expected_version, now))
        return await self._run(self._sql.append(session_id, events, expected_version, now))

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        check_session_id(session_id)
        events = await self._run(self._sql.events(session_id, after_seq, last, types), transaction=False)
        return [] if events and await self._expired(session_id) else events

    async def version(self, session_id: str) -> int:
        check_session_id(session_id)
        if await self._expired(session_id):
            return 0
        return await self._run(self._sql.version(session_id), transaction=False)

    async def _expired(self, session_id: str) -> bool:
        if self.ttl is None:
            return False
        return await self._run(self._sql.expired(session_id, self.ttl, None), transaction=False)

    async def delete_expired(self, now: float | None = None) -> int:
        return len(await self._run(self._sql.delete_expired(self.ttl, now)))

    async def prune(self, session_id: str, below_seq: int) -> int:
        return await self._run(self._sql.prune(check_session_id(session_id), below_seq, self.ttl))

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, ttl, text = session_to_create(session_id, ttl, metadata, self.ttl)
        found = await self._run(self._sql.create(session_id, ttl, text, self._clock(), self.ttl))
        return session_of(session_id, *found)

    async def get(self, session_id: str) -> Session | None:
        found = await self._run(self._sql.get(check_session_id(session_id), self.ttl, None), transaction=False)
        return None if found is None else session_of(session_id, *found)

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        await self._run(self._sql.delete_session(session_id))

    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        check_session_id(session_id)
        return await self._run(self._sql.try_lease(session_id, token, ttl, 0.0))

    async def release_lease(self, session_id: str, token: str) -> bool:
        check_session_id(session_id)
        return await self._run(self._sql.release_lease(session_id, token))

    async def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        journals = self._sql.journals(check_session_id(session_id), self.ttl, None)
        return await self._run(journals, transaction=False)

    async def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        write = self._sql.write_journal(check_session_id(session_id), turn_id, version, entry, self.ttl, None)
        landed, _ = await self._run(write)
        return landed

    async def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        await self._run(self._sql.journal.clear(check_session_id(session_id), turn_id))

    async def close(self) -> None:
        await self._db.close()
