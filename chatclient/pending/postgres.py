"""Paused tool calls and their nonces in PostgreSQL (``pip install "chatclient[postgres]"``), shared by
every process that reaches the database. Expiry is decided by the server's clock (``now()``).

- :class:`PostgresPendingToolCallStore`: ``INSERT … ON CONFLICT`` (put if absent), an ``UPDATE``
  that marks the row taken by a random token (take once: of N concurrent takers exactly one gets
  the row), then a ``DELETE`` of that row.
- :class:`PostgresNonceLedger`: an insert that succeeds once per nonce (an expired entry is reused).
- :class:`AsyncPostgresPendingToolCallStore`, :class:`AsyncPostgresNonceLedger`: the same statements
  on a ``psycopg_pool.AsyncConnectionPool`` (``await open()`` first). The SQL and the reading of
  its answers are written once, in :class:`_PendingSql` and :class:`_NonceSql`.

A save, take, peek, redeem or release whose reply is lost (the connection dropped after the server
ran it) is sent once more on another connection, and the second answer is the first one's: the
take's token marks the row as this taker's (``taken:<token>`` before the state), a save finds its
own row, a redeem its own token, so the retry is not told the state is gone or the nonce spent
(with ``DELETE … RETURNING`` it would be, and the paused turn lost with it). ``discard`` is not sent
twice (a lost reply there raises: the state may still be stored).
"""

from __future__ import annotations

import secrets
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import chatclient.pending.state as _pending

from .._storage.postgres import AsyncPool, locked_schema, open_pool
from .._storage.sql import Statement, check_prefix
from ..errors import PendingStateExpiredError, PendingStateNotFoundError, PendingStoreError
from ..tools.confirmation import PendingToolCalls
from .outage import atwice, store_call, take_mark, twice
from .state import _expires_at, check_secret, check_state_id, dump_state, load_state, open_entry, seal_entry

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = [
    "AsyncPostgresNonceLedger",
    "AsyncPostgresPendingToolCallStore",
    "PostgresNonceLedger",
    "PostgresPendingToolCallStore",
]

_WEEK = 7 * 24 * 3600.0
_NOT_TAKEN = "state NOT LIKE 'taken:%%'"
"""A row waiting to be resumed (a state is JSON or keyed text: it never starts with ``taken:``)."""


def _is_lost_connection(exc: BaseException) -> bool:
    import psycopg

    return isinstance(exc, psycopg.OperationalError)


def _seconds(expires_at: float | None, default: float) -> float:
    return (expires_at - time.time()) if expires_at is not None else default


def _table(prefix: str, name: str) -> str:
    return f"{check_prefix(prefix)}{name}"


class _PendingSql:
    """The statements of the pending store, and what their rows mean."""

    def __init__(self, prefix: str, secret: bytes | None) -> None:
        self.secret = check_secret(secret)
        t = self.table = _table(prefix, "pending")
        self.schema = [
            f"CREATE TABLE IF NOT EXISTS {t} (id TEXT PRIMARY KEY, state TEXT NOT NULL,"
            " expires_at TIMESTAMPTZ NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            f"CREATE INDEX IF NOT EXISTS {t}_expires ON {t} (expires_at)",
        ]
        j = self.journal = _table(prefix, "pending_journal")
        self.schema.append(
            f"CREATE TABLE IF NOT EXISTS {j} (id TEXT PRIMARY KEY, version BIGINT NOT NULL, entry TEXT NOT NULL,"
            " expires_at TIMESTAMPTZ NOT NULL)"
        )

    def save(self, pending: PendingToolCalls, ttl: float | None) -> tuple[str, Statement]:
        """Put the state under a new id; the row comes back when it is this state's (a retry whose
        first reply was lost), none when the id was another's."""
        state_id, deadline = _pending._new_id(), _expires_at(pending, ttl)
        t = self.table
        sql = (
            f"INSERT INTO {t} (id, state, expires_at) VALUES (%s, %s, now() + %s * interval '1 second')"
            f" ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id WHERE {t}.state = EXCLUDED.state RETURNING id"
        )
        stored = dump_state(pending, state_id, deadline, self.secret)
        return state_id, (sql, (state_id, stored, _seconds(deadline, _WEEK)))

    def take(self, state_id: str, mark: str) -> Statement:
        """Mark the row taken by ``mark`` (``taken:<token>\n``) and give the state; the same mark
        finds it again (a retry), any other none."""
        sql = (
            f"UPDATE {self.table} SET state = CASE WHEN {_NOT_TAKEN} THEN %s || state ELSE state END"
            f" WHERE id = %s AND ({_NOT_TAKEN} OR left(state, %s::int) = %s)"
            " RETURNING substr(state, %s::int + 1), expires_at > now()"
        )
        return sql, (mark, check_state_id(state_id), len(mark), mark, len(mark))

    def taken(self, state_id: str, mark: str) -> Statement:
        """Remove the row this taker marked (the state is in its hands)."""
        return (f"DELETE FROM {self.table} WHERE id = %s AND left(state, %s::int) = %s", (state_id, len(mark), mark))

    def peek(self, state_id: str) -> Statement:
        return (
            f"SELECT state, expires_at > now() FROM {self.table} WHERE id = %s AND {_NOT_TAKEN}",
            (check_state_id(state_id),),
        )

    def discard(self, state_id: str) -> Statement:
        live = f"{_NOT_TAKEN} AND (expires_at IS NULL OR expires_at > now())"
        return (f"DELETE FROM {self.table} WHERE id = %s RETURNING {live}", (check_state_id(state_id),))

    def purge(self) -> Statement:
        return (
            f"WITH j AS (DELETE FROM {self.journal} WHERE expires_at <= now())"
            f" DELETE FROM {self.table} WHERE expires_at <= now()",
            (),
        )

    def progress(self, state_id: str) -> Statement:
        return (f"SELECT version, entry FROM {self.journal} WHERE id = %s", (check_state_id(state_id),))

    def record(self, state_id: str, version: int, entry: str) -> Statement:
        """Write ``entry`` as ``version + 1`` if the journal is at ``version`` and the state waits (a
        row comes back); a resent statement whose first reply was lost finds its own entry."""
        j, t = self.journal, self.table
        entry = seal_entry(self.secret, state_id, version + 1, entry)
        if version == 0:
            sql = (
                f"INSERT INTO {j} (id, version, entry, expires_at) SELECT id, 1, %s, expires_at FROM {t}"
                f" WHERE id = %s AND {_NOT_TAKEN} ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id"
                f" WHERE {j}.version = 1 AND {j}.entry = EXCLUDED.entry RETURNING 1"
            )
            return sql, (entry, check_state_id(state_id))
        sql = (
            f"UPDATE {j} SET version = %s, entry = %s WHERE id = %s AND (version = %s OR (version = %s AND entry = %s))"
            f" AND EXISTS (SELECT 1 FROM {t} WHERE id = %s AND {_NOT_TAKEN}) RETURNING 1"
        )
        return sql, (version + 1, entry, check_state_id(state_id), version, version + 1, entry, state_id)

    def journal_of(self, state_id: str, row: Any) -> tuple[int, str | None]:
        if row is None:
            return 0, None
        version = int(row[0])
        return version, open_entry(self.secret, state_id, version, str(row[1]))

    @staticmethod
    def discarded(row: Any) -> bool:
        """``True`` when a live state was dropped (an expired one is dropped too, as ``False``)."""
        return row is not None and bool(row[0])

    @staticmethod
    def saved(state_id: str, row: Any) -> str:
        if row is None:
            raise PendingStateNotFoundError("A pending state id collided; nothing was stored")
        return state_id

    def state(self, state_id: str, row: Any) -> PendingToolCalls:
        if row is None:
            raise PendingStateNotFoundError(
                "No pending tool calls under this id (unknown, or already resumed); nothing ran"
            )
        if not row[1]:
            raise PendingStateExpiredError("The pending tool calls expired; nothing ran")
        return load_state(row[0], state_id, self.secret)


class _NonceSql:
    def __init__(self, prefix: str) -> None:
        self.table = _table(prefix, "nonce")
        self.schema = [
            f"CREATE TABLE IF NOT EXISTS {self.table} (nonce TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL)",
            # Who redeemed it: a retry whose first reply was lost is the same redeemer (added in place
            # to a table made by earlier versions; their rows have none).
            f"ALTER TABLE {self.table} ADD COLUMN IF NOT EXISTS redeemed_by TEXT",
        ]

    def redeem(self, nonce: str, expires_at: float | None, retention: float) -> Statement:
        """Redeem ``nonce`` under a new token; the statement's text and values are the retry's too."""
        t = self.table
        sql = (
            f"INSERT INTO {t} (nonce, expires_at, redeemed_by) VALUES (%s, now() + %s * interval '1 second', %s)"
            f" ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at, redeemed_by = EXCLUDED.redeemed_by"
            f" WHERE {t}.expires_at <= now() OR {t}.redeemed_by = EXCLUDED.redeemed_by RETURNING nonce"
        )
        return sql, (nonce, _seconds(expires_at, retention), secrets.token_hex(16))

    def release(self, nonce: str) -> Statement:
        return (f"DELETE FROM {self.table} WHERE nonce = %s", (nonce,))


def _pool(url: str | None, pool: Any, name: str, schema: list[str], connect_timeout: float) -> Any:
    """The shared plumbing's pool with this store's tables (locked on the first statement's text,
    the key earlier versions lock on); an unreachable server raises ``PendingStoreError``."""
    return open_pool(
        url,
        pool,
        name=name,
        schema=locked_schema(schema[0], schema),
        failed=lambda message: PendingStoreError(message, store=name),
        connect_timeout=connect_timeout,
    )


class _AsyncPool(AsyncPool):
    """The shared async pool (``await open()`` makes the tables, as :func:`_pool`), plus the one
    call every statement here needs."""

    def __init__(self, url: str | None, pool: Any, name: str, schema: list[str], connect_timeout: float) -> None:
        super().__init__(
            url,
            pool,
            name=name,
            schema=lambda: locked_schema(schema[0], schema),
            failed=lambda message: PendingStoreError(message, store=name),
            connect_timeout=connect_timeout,
        )

    async def fetchone(self, statement: Statement) -> Any:
        async with self.connection() as conn:
            cur = await conn.execute(*statement)
            return await cur.fetchone() if cur.description is not None else cur.rowcount


class PostgresPendingToolCallStore:
    """Paused states in table ``{prefix}pending``; ``ttl`` (seconds) bounds how long one waits.
    With a ``secret``, a state rewritten in the table by anyone without it is refused."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        connect_timeout: float = 5.0,
        prefix: str = "chatclient_",
        ttl: float | None = 3600.0,
        secret: bytes | None = None,
    ) -> None:
        self._sql = _PendingSql(prefix, secret)
        self._own = pool is None
        self._pool = _pool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._ttl = ttl

    def _one(self, statement: Statement) -> Any:
        with self._pool.connection() as conn:
            return conn.execute(*statement).fetchone()

    def save(self, pending: PendingToolCalls) -> str:
        state_id, statement = self._sql.save(pending, self._ttl)
        with store_call(self, "save"):
            return self._sql.saved(state_id, twice(_is_lost_connection, lambda: self._one(statement)))

    def take(self, state_id: str) -> PendingToolCalls:
        mark = take_mark()
        statement = self._sql.take(state_id, mark)
        with store_call(self, "take"):
            row = twice(_is_lost_connection, lambda: self._one(statement))
        if row is not None:
            with suppress(Exception):  # left behind, the marked row goes with the expired ones
                self._one(self._sql.taken(state_id, mark))
        return self._sql.state(state_id, row)

    def peek(self, state_id: str) -> PendingToolCalls:
        """The state, left in place; raises as ``take`` does once it is taken or expired."""
        statement = self._sql.peek(state_id)
        with store_call(self, "peek"):
            return self._sql.state(state_id, twice(_is_lost_connection, lambda: self._one(statement)))

    def discard(self, state_id: str) -> bool:
        with store_call(self, "discard"):
            return self._sql.discarded(self._one(self._sql.discard(state_id)))

    def progress(self, state_id: str) -> tuple[int, str | None]:
        """The journal of the turn resumed from this state (see ``JournaledStore``)."""
        statement = self._sql.progress(state_id)
        with store_call(self, "progress"):
            return self._sql.journal_of(state_id, twice(_is_lost_connection, lambda: self._one(statement)))

    def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        statement = self._sql.record(state_id, version, entry)
        with store_call(self, "record_progress"):
            return twice(_is_lost_connection, lambda: self._one(statement)) is not None

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
        secret: bytes | None = None,
    ) -> None:
        self._sql = _PendingSql(prefix, secret)
        self._db = _AsyncPool(url, pool, type(self).__name__, self._sql.schema, connect_timeout)
        self._ttl = ttl

    async def open(self) -> None:
        await self._db.open()

    async def save(self, pending: PendingToolCalls) -> str:
        state_id, statement = self._sql.save(pending, self._ttl)
        with store_call(self, "save"):
            return self._sql.saved(state_id, await atwice(_is_lost_connection, lambda: self._db.fetchone(statement)))

    async def take(self, state_id: str) -> PendingToolCalls:
        mark = take_mark()
        statement = self._sql.take(state_id, mark)
        with store_call(self, "take"):
            row = await atwice(_is_lost_connection, lambda: self._db.fetchone(statement))
        if row is not None:
            with suppress(Exception):  # left behind, the marked row goes with the expired ones
                await self._db.fetchone(self._sql.taken(state_id, mark))
        return self._sql.state(state_id, row)

    async def peek(self, state_id: str) -> PendingToolCalls:
        statement = self._sql.peek(state_id)
        with store_call(self, "peek"):
            return self._sql.state(state_id, await atwice(_is_lost_connection, lambda: self._db.fetchone(statement)))

    async def discard(self, state_id: str) -> bool:
        with store_call(self, "discard"):
            return self._sql.discarded(await self._db.fetchone(self._sql.discard(state_id)))

    async def progress(self, state_id: str) -> tuple[int, str | None]:
        statement = self._sql.progress(state_id)
        with store_call(self, "progress"):
            return self._sql.journal_of(
                state_id, await atwice(_is_lost_connection, lambda: self._db.fetchone(statement))
            )

    async def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        statement = self._sql.record(state_id, version, entry)
        with store_call(self, "record_progress"):
            return await atwice(_is_lost_connection, lambda: self._db.fetchone(statement)) is not None

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

    def _one(self, statement: Statement) -> Any:
        with self._pool.connection() as conn:
            cur = conn.execute(*statement)
            return cur.fetchone() if cur.description is not None else cur.rowcount

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        statement = self._sql.redeem(nonce, expires_at, self._retention)
        with store_call(self, "redeem"):
            return twice(_is_lost_connection, lambda: self._one(statement)) is not None

    def release(self, nonce: str) -> None:
        statement = self._sql.release(nonce)
        with store_call(self, "release"):
            twice(_is_lost_connection, lambda: self._one(statement))

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
        statement = self._sql.redeem(nonce, expires_at, self._retention)
        with store_call(self, "redeem"):
            return await atwice(_is_lost_connection, lambda: self._db.fetchone(statement)) is not None

    async def release(self, nonce: str) -> None:
        statement = self._sql.release(nonce)
        with store_call(self, "release"):
            await atwice(_is_lost_connection, lambda: self._db.fetchone(statement))

    async def close(self) -> None:
        await self._db.close()
