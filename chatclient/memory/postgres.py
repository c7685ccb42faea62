"""The session log in PostgreSQL (``pip install "chatclient[postgres]"``: psycopg 3 with a pool).

An append is one transaction: the session row is created if absent (``ON CONFLICT DO NOTHING``,
so concurrent first appends cannot fail), locked (``FOR UPDATE``), and the new events are inserted
with the next numbers. Connections come from a ``psycopg_pool`` pool, one per operation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError
from ._sql import POSTGRES, Flow, Rows, SessionSql, Statement, arun_flow, run_flow
from .errors import SessionStoreError
from .expiry import Session, check_ttl, session_of, session_to_create
from .log import AppendResult, NewEvent, SessionEvent, check_session_id

if TYPE_CHECKING:
    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AsyncPostgresSessionRepository", "PostgresSessionRepository", "require_psycopg"]

T = TypeVar("T")


def require_psycopg() -> None:
    """Import the driver, or say which extra installs it."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            'The PostgreSQL stores need psycopg 3 and its pool: pip install "chatclient[postgres]"'
        ) from exc


CONNECT_TIMEOUT = 5.0
"""Seconds to connect, and to wait for a pooled connection, before the store gives up (the pool's
own default of 30 s would hold a turn that long when the server is down)."""


def pool_kwargs(
    prepare_threshold: int | None, connect_timeout: float = CONNECT_TIMEOUT, *, asynchronous: bool = False
) -> dict[str, Any]:
    # ``prepare_threshold=None`` disables server-side prepared statements (needed behind pgbouncer).
    # Autocommit: a one-statement read or take is one round trip; writes open their transaction.
    # ``check``: a connection the server dropped (a restart) is replaced before it is handed out.
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    if connect_timeout <= 0:
        raise ConfigurationError(f"connect_timeout must be a positive number of seconds, got {connect_timeout}")
    kwargs = {
        "prepare_threshold": prepare_threshold,
        "autocommit": True,
        "connect_timeout": max(1, round(connect_timeout)),
    }
    check = AsyncConnectionPool.check_connection if asynchronous else ConnectionPool.check_connection
    return {"kwargs": kwargs, "min_size": 1, "max_size": 8, "open": True, "timeout": connect_timeout, "check": check}


def server_address(url: str | None, pool: Any = None) -> str:
    """``user@host:port/dbname`` of ``url`` (or of the pool's conninfo): never the password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url if url is not None else getattr(pool, "conninfo", ""))
    except Exception:  # not parseable: the driver reports that itself when it connects
        return "the configured server"
    user, dbname = info.get("user"), info.get("dbname")
    address = f"{info.get('host') or 'localhost'}:{info.get('port') or 5432}"
    return f"{f'{user}@' if user else ''}{address}{f'/{dbname}' if dbname else ''}"


def unreachable(name: str, url: str | None, pool: Any, connect_timeout: float, exc: BaseException) -> str:
    """Why ``name`` could not start: the server, without the password, and the timeout waited."""
    return (
        f"{name} could not reach PostgreSQL at {server_address(url, pool)} within "
        f"connect_timeout={connect_timeout:g} s ({type(exc).__name__}: {exc}); is the server running "
        "and the address right? A slow network may need a larger connect_timeout"
    )


def is_driver_error(exc: BaseException) -> bool:
    """Raised by psycopg or its pool (a timeout, a refused connection), not by chatclient."""
    return any(cls.__module__.split(".")[0] in ("psycopg", "psycopg_pool") for cls in type(exc).__mro__)


def run_on(conn: Connection[Any], flow: Flow[T], *, transaction: bool = True) -> T:
    def execute(statement: Statement) -> Rows:
        cur = conn.execute(*statement)
        return list(cur.fetchall()) if cur.description is not None else []

    if not transaction:  # one statement: atomic by itself
        return run_flow(flow, execute)
    with conn.transaction():
        return run_flow(flow, execute)


async def arun_on(conn: AsyncConnection[Any], flow: Flow[T], *, transaction: bool = True) -> T:
    async def execute(statement: Statement) -> Rows:
        cur = await conn.execute(*statement)
        return list(await cur.fetchall()) if cur.description is not None else []

    if not transaction:
        return await arun_flow(flow, execute)
    async with conn.transaction():
        return await arun_flow(flow, execute)


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
        require_psycopg()
        from psycopg_pool import ConnectionPool

        self.ttl = check_ttl(ttl)
        self._own_pool = pool is None
        if pool is None:
            if url is None:
                raise ConfigurationError("PostgresSessionRepository needs a url or a pool")
            pool = ConnectionPool(url, **pool_kwargs(prepare_threshold, connect_timeout))
        self._pool: ConnectionPool[Any] = pool
        self._sql = SessionSql(prefix, POSTGRES)
        self._clock = clock
        try:
            self._run(self._sql.all_schema())
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            self.close()  # our pool would go on reconnecting in its threads
            message = unreachable(type(self).__name__, url, pool, connect_timeout, exc)
            raise SessionStoreError(message, conversation_id="", backend=type(self).__name__) from exc

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
        require_psycopg()
        self.ttl = check_ttl(ttl)
        if pool is None and url is None:
            raise ConfigurationError("AsyncPostgresSessionRepository needs a url or a pool")
        self._url, self._pool, self._own_pool = url, pool, pool is None
        self._prepare_threshold, self._connect_timeout = prepare_threshold, connect_timeout
        self._sql = SessionSql(prefix, POSTGRES)
        self._clock = clock

    async def open(self) -> None:
        if self._pool is None:
            from psycopg_pool import AsyncConnectionPool

            kwargs = pool_kwargs(self._prepare_threshold, self._connect_timeout, asynchronous=True) | {"open": False}
            assert self._url is not None  # checked in __init__
            self._pool = AsyncConnectionPool(self._url, **kwargs)
            await self._pool.open()
        try:
            await self._run(self._sql.all_schema())
        except Exception as exc:
            if not is_driver_error(exc):
                raise
            message = unreachable(type(self).__name__, self._url, self._pool, self._connect_timeout, exc)
            if self._own_pool:  # closed and forgotten: a later open() starts afresh
                pool, self._pool = self._pool, None
                await pool.close()
            raise SessionStoreError(message, conversation_id="", backend=type(self).__name__) from exc

    async def _run(self, flow: Flow[T], *, transaction: bool = True) -> T:
        if self._pool is None:
            raise ConfigurationError("Call `await repository.open()` before using AsyncPostgresSessionRepository")
        async with self._pool.connection() as conn:
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

            if self._pool is None:
                raise ConfigurationError("Call `await repository.open()` before using AsyncPostgresSessionRepository")
            async with self._pool.connection() as conn:
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

    async def close(self) -> None:
        if self._own_pool and self._pool is not None:
            await self._pool.close()
