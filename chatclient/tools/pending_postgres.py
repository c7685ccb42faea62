"""Paused tool calls and their nonces in PostgreSQL (``pip install "chatclient[postgres]"``), shared by
every process that reaches the database. Expiry is decided by the server's clock (``now()``).

- :class:`PostgresPendingToolCallStore`: ``INSERT … ON CONFLICT DO NOTHING`` (put if absent),
  ``DELETE … RETURNING`` (take once: of N concurrent takers exactly one gets the row).
- :class:`PostgresNonceLedger`: an insert that succeeds once per nonce (an expired entry is reused).
- :class:`AsyncPostgresPendingToolCallStore`, :class:`AsyncPostgresNonceLedger`: the same statements
  on a ``psycopg_pool.AsyncConnectionPool`` (``await open()`` first). The SQL and the reading of
  its answers are written once, in :class:`_PendingSql` and :class:`_NonceSql`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, PendingStateExpiredError, PendingStateNotFoundError, PendingStoreError
from . import pending as _pending
from .confirmation import PendingToolCalls
from .pending import _expires_at, check_state_id
from .pending_outage import store_call

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = [
    "AsyncPostgresNonceLedger",
    "AsyncPostgresPendingToolCallStore",
    "PostgresNonceLedger",
    "PostgresPendingToolCallStore",
]

_WEEK = 7 * 24 * 3600.0
Statement = tuple[str, tuple[Any, ...]]


def _seconds(expires_at: float | None, default: float) -> float:
    return (expires_at - time.time()) if expires_at is not None else default


def _table(prefix: str, name: str) -> str:
    from ..memory._sql import check_prefix

    return f"{check_prefix(prefix)}{name}"


class _PendingSql:
    """The statements of the pending store, and what their rows mean."""

    def __init__(self, prefix: str) -> None:
        t = self.table = _table(prefix, "pending")
        self.schema = [
            f"CREATE TABLE IF NOT EXISTS {t} (id TEXT PRIMARY KEY, state TEXT NOT NULL,"
            " expires_at TIMESTAMPTZ NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            f"CREATE INDEX IF NOT EXISTS {t}_expires ON {t} (expires_at)",
        ]

    def save(self, pending: PendingToolCalls, ttl: float | None) -> tuple[str, Statement]:
        state_id, seconds = _pending._new_id(), _seconds(_expires_at(pending, ttl), _WEEK)
        sql = (
            f"INSERT INTO {self.table} (id, state, expires_at) VALUES (%s, %s, now() + %s * interval '1 second')"
            " ON CONFLICT (id) DO NOTHING RETURNING id"
        )
        return state_id, (sql, (state_id, pending.model_dump_json(), seconds))

    def take(self, state_id: str) -> Statement:
        return (
            f"DELETE FROM {self.table} WHERE id = %s RETURNING state, expires_at > now()",
            (check_state_id(state_id),),
        )

    def peek(self, state_id: str) -> Statement:
        return (f"SELECT state, expires_at > now() FROM {self.table} WHERE id = %s", (check_state_id(state_id),))

    def discard(self, state_id: str) -> Statement:
        live = "expires_at IS NULL OR expires_at > now()"
        return (f"DELETE FROM {self.table} WHERE id = %s RETURNING {live}", (check_state_id(state_id),))

    def purge(self) -> Statement:
        return (f"DELETE FROM {self.table} WHERE expires_at <= now()", ())

    @staticmethod
    def discarded(row: Any) -> bool:
        """``True`` when a live state was dropped (an expired one is dropped too, as ``False``)."""
        return row is not None and bool(row[0])

    @staticmethod
    def saved(state_id: str, row: Any) -> str:
        if row is None:
            raise PendingStateNotFoundError("A pending state id collided; nothing was stored")
        return state_id

    @staticmethod
    def state(row: Any) -> PendingToolCalls:
        if row is None:
            raise PendingStateNotFoundError(
                "No pending tool calls under this id (unknown, or already resumed); nothing ran"
            )
        if not row[1]:
            raise PendingStateExpiredError("The pending tool calls expired; nothing ran")
        return PendingToolCalls.model_validate_json(row[0])


class _NonceSql:
    def __init__(self, prefix: str) -> None:
        self.table = _table(prefix, "nonce")
        self.schema = [
            f"CREATE TABLE IF NOT EXISTS {self.table} (nonce TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL)"
        ]

    def redeem(self, nonce: str, expires_at: float | None, retention: float) -> Statement:
        sql = (
            f"INSERT INTO {self.table} (nonce, expires_at) VALUES (%s, now() + %s * interval '1 second')"
            f" ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at"
            f" WHERE {self.table}.expires_at <= now() RETURNING nonce"
        )
        return sql, (nonce, _seconds(expires_at, retention))

    def release(self, nonce: str) -> Statement:
        return (f"DELETE FROM {self.table} WHERE nonce = %s", (nonce,))


def _pool(url: str | None, pool: Any, name: str, schema: list[str], connect_timeout: float) -> Any:
    from ..memory.postgres import is_driver_error, pool_kwargs, require_psycopg, unreachable

    require_psycopg()
    from psycopg_pool import ConnectionPool

    if pool is None:
        if url is None:
            raise ConfigurationError(f"{name} needs a url or a pool")
        own = ConnectionPool(url, **pool_kwargs(5, connect_timeout))
    try:
        with (pool or own).connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema[0],))
            for statement in schema:
                conn.execute(statement)
    except Exception as exc:
        if not is_driver_error(exc):
            raise
        if pool is None:
            own.close()  # it would go on reconnecting in its threads
        raise PendingStoreError(unreachable(name, url, pool, connect_timeout, exc), store=name) from exc
    return pool or own


class _AsyncPool:
    """An async pool opened on first use (``await open()``), its schema created under a lock."""

    def __init__(self, url: str | None, pool: Any, name: str, schema: list[str], connect_timeout: float) -> None:
        from ..memory.postgres import require_psycopg

        require_psycopg()
        if url is None and pool is None:
            raise ConfigurationError(f"{name} needs a url or a pool")
        self._url, self.pool, self.own, self._schema, self._name = url, pool, pool is None, schema, name
        self._connect_timeout = connect_timeout

    async def open(self) -> None:
        if self.pool is None:
            from psycopg_pool import AsyncConnectionPool

            from ..memory.postgres import pool_kwargs

            kwargs = pool_kwargs(5, self._connect_timeout, asynchronous=True) | {"open": False}
            self.pool = AsyncConnectionPool(self._url, **kwargs)  # type: ignore[arg-type]
            await self.pool.open()
        try:
            async with self.pool.connection() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self._schema[0],))
                for statement in self._schema:
                    await conn.execute(statement)
        except Exception as exc:
            from ..memory.postgres import is_driver_error, unreachable

            if not is_driver_error(exc):
                raise
            message = unreachable(self._name, self._url, self.pool, self._connect_timeout, exc)
            if self.own:  # closed and forgotten: a later open() starts afresh
                pool, self.pool = self.pool, None
                await pool.close()
            raise PendingStoreError(message, store=self._name) from exc

    async def fetchone(self, statement: Statement) -> Any:
        if self.pool is None:
            raise ConfigurationError(f"Call `await store.open()` before using {self._name}")
        async with self.pool.connection() as conn:
            cur = await conn.execute(*statement)
            return await cur.fetchone() if cur.description is not None else cur.rowcount

    async def close(self) -> None:
        if self.own and self.pool is not None:
            await self.pool.close()


class PostgresPendingToolCallStore:
    """Paused states in table ``{prefix}pending``; ``ttl`` (seconds) bounds how long one waits."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        connect_timeout: float = 5.0,
        prefix: str = "chatclient_",
        ttl: float | None = 3600.0,
    ) -> None:
        self._sql = _PendingSql(prefix)
        self._own = pool is None
        self._pool = _pool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._ttl = ttl

    def _one(self, statement: Statement) -> Any:
        with self._pool.connection() as conn:
            return conn.execute(*statement).fetchone()

    def save(self, pending: PendingToolCalls) -> str:
        state_id, statement = self._sql.save(pending, self._ttl)
        with store_call(self, "save"):
            return self._sql.saved(state_id, self._one(statement))

    def take(self, state_id: str) -> PendingToolCalls:
        with store_call(self, "take"):
            return self._sql.state(self._one(self._sql.take(state_id)))

    def peek(self, state_id: str) -> PendingToolCalls:
        """The state, left in place; raises as ``take`` does once it is taken or expired."""
        with store_call(self, "peek"):
            return self._sql.state(self._one(self._sql.peek(state_id)))

    def discard(self, state_id: str) -> bool:
        with store_call(self, "discard"):
            return self._sql.discarded(self._one(self._sql.discard(state_id)))

    def purge_expired(self) -> int:
        with store_call(self, "purge_expired"), self._pool.connection() as conn:
            return int(conn.execute(*self._sql.purge()).rowcount)

    def close(self) -> None:
        if self._own:
            self._pool.close()


class AsyncPostgresPendingToolCallStore:
    """The async face of :class:`PostgresPendingToolCallStore`; ``await open()`` first."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        connect_timeout: float = 5.0,
        prefix: str = "chatclient_",
        ttl: float | None = 3600.0,
    ) -> None:
        self._sql = _PendingSql(prefix)
        self._db = _AsyncPool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._ttl = ttl

    async def open(self) -> None:
        await self._db.open()

    async def save(self, pending: PendingToolCalls) -> str:
        state_id, statement = self._sql.save(pending, self._ttl)
        with store_call(self, "save"):
            return self._sql.saved(state_id, await self._db.fetchone(statement))

    async def take(self, state_id: str) -> PendingToolCalls:
        with store_call(self, "take"):
            return self._sql.state(await self._db.fetchone(self._sql.take(state_id)))

    async def peek(self, state_id: str) -> PendingToolCalls:
        with store_call(self, "peek"):
            return self._sql.state(await self._db.fetchone(self._sql.peek(state_id)))

    async def discard(self, state_id: str) -> bool:
        with store_call(self, "discard"):
            return self._sql.discarded(await self._db.fetchone(self._sql.discard(state_id)))

    async def purge_expired(self) -> int:
        with store_call(self, "purge_expired"):
            return int(await self._db.fetchone(self._sql.purge()))

    async def close(self) -> None:
        await self._db.close()


class PostgresNonceLedger:
    """Redeemed nonces in table ``{prefix}nonce``, kept until the state would expire (or for
    ``retention`` seconds when it has no expiry)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        connect_timeout: float = 5.0,
        prefix: str = "chatclient_",
        retention: float = _WEEK,
    ) -> None:
        self._sql = _NonceSql(prefix)
        self._own = pool is None
        self._pool = _pool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._retention = retention

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        with store_call(self, "redeem"), self._pool.connection() as conn:
            return conn.execute(*self._sql.redeem(nonce, expires_at, self._retention)).fetchone() is not None

    def release(self, nonce: str) -> None:
        with store_call(self, "release"), self._pool.connection() as conn:
            conn.execute(*self._sql.release(nonce))

    def close(self) -> None:
        if self._own:
            self._pool.close()


class AsyncPostgresNonceLedger:
    """The async face of :class:`PostgresNonceLedger`; ``await open()`` first."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        connect_timeout: float = 5.0,
        prefix: str = "chatclient_",
        retention: float = _WEEK,
    ) -> None:
        self._sql = _NonceSql(prefix)
        self._db = _AsyncPool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._retention = retention

    async def open(self) -> None:
        await self._db.open()

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        with store_call(self, "redeem"):
            return await self._db.fetchone(self._sql.redeem(nonce, expires_at, self._retention)) is not None

    async def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            await self._db.fetchone(self._sql.release(nonce))

    async def close(self) -> None:
        await self._db.close()
