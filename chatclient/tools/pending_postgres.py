"""Paused tool calls and their nonces in PostgreSQL (``pip install "chatclient[postgres]"``), shared by
every process that reaches the database. Expiry is decided by the server's clock (``now()``).

- :class:`PostgresPendingToolCallStore`: ``INSERT … ON CONFLICT DO NOTHING`` (put if absent),
  ``DELETE … RETURNING`` (take once: of N concurrent takers exactly one gets the row).
- :class:`PostgresNonceLedger`: an insert that succeeds once per nonce (an expired entry is reused).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, PendingStateExpiredError, PendingStateNotFoundError
from .confirmation import PendingToolCalls
from .pending import _expires_at, _new_id

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresNonceLedger", "PostgresPendingToolCallStore"]

_WEEK = 7 * 24 * 3600.0


def _pool(url: str | None, pool: Any, name: str, schema: list[str]) -> Any:
    from ..memory.postgres import pool_kwargs, require_psycopg

    require_psycopg()
    from psycopg_pool import ConnectionPool

    if pool is None:
        if url is None:
            raise ConfigurationError(f"{name} needs a url or a pool")
        pool = ConnectionPool(url, **pool_kwargs(5))
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (schema[0],))
        for statement in schema:
            conn.execute(statement)
    return pool


def _seconds(expires_at: float | None, default: float) -> float:
    return (expires_at - time.time()) if expires_at is not None else default


class PostgresPendingToolCallStore:
    """Paused states in table ``{prefix}pending``; ``ttl`` (seconds) bounds how long one waits."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        prefix: str = "chatclient_",
        ttl: float | None = 3600.0,
    ) -> None:
        from ..memory._sql import check_prefix

        self._table = f"{check_prefix(prefix)}pending"
        schema = [
            f"CREATE TABLE IF NOT EXISTS {self._table} (id TEXT PRIMARY KEY, state TEXT NOT NULL,"
            " expires_at TIMESTAMPTZ NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            f"CREATE INDEX IF NOT EXISTS {self._table}_expires ON {self._table} (expires_at)",
        ]
        self._own = pool is None
        self._pool = _pool(url, pool, type(self).__name__, schema)
        self._ttl = ttl

    def save(self, pending: PendingToolCalls) -> str:
        seconds = _seconds(_expires_at(pending, self._ttl), _WEEK)
        state_id = _new_id()
        with self._pool.connection() as conn:
            row = conn.execute(
                f"INSERT INTO {self._table} (id, state, expires_at) VALUES (%s, %s, now() + %s * interval '1 second')"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (state_id, pending.model_dump_json(), seconds),
            ).fetchone()
        if row is None:
            raise PendingStateNotFoundError("A pending state id collided; nothing was stored")
        return state_id

    def take(self, state_id: str) -> PendingToolCalls:
        with self._pool.connection() as conn:
            row = conn.execute(
                f"DELETE FROM {self._table} WHERE id = %s RETURNING state, expires_at > now()", (state_id,)
            ).fetchone()
        if row is None:
            raise PendingStateNotFoundError(
                "No pending tool calls under this id (unknown, or already resumed); nothing ran"
            )
        if not row[1]:
            raise PendingStateExpiredError("The pending tool calls expired; nothing ran")
        return PendingToolCalls.model_validate_json(row[0])

    def peek(self, state_id: str) -> PendingToolCalls:
        """The state, left in place; raises as ``take`` does once it is taken or expired."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT state, expires_at > now() FROM {self._table} WHERE id = %s", (state_id,)
            ).fetchone()
        if row is None:
            raise PendingStateNotFoundError("No pending tool calls under this id (unknown, or already resumed)")
        if not row[1]:
            raise PendingStateExpiredError("The pending tool calls expired; nothing ran")
        return PendingToolCalls.model_validate_json(row[0])

    def discard(self, state_id: str) -> bool:
        with self._pool.connection() as conn:
            return bool(conn.execute(f"DELETE FROM {self._table} WHERE id = %s", (state_id,)).rowcount > 0)

    def purge_expired(self) -> int:
        with self._pool.connection() as conn:
            return int(conn.execute(f"DELETE FROM {self._table} WHERE expires_at <= now()").rowcount)

    def close(self) -> None:
        if self._own:
            self._pool.close()


class PostgresNonceLedger:
    """Redeemed nonces in table ``{prefix}nonce``, kept until the state would expire (or for
    ``retention`` seconds when it has no expiry)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        prefix: str = "chatclient_",
        retention: float = _WEEK,
    ) -> None:
        from ..memory._sql import check_prefix

        self._table = f"{check_prefix(prefix)}nonce"
        schema = [f"CREATE TABLE IF NOT EXISTS {self._table} (nonce TEXT PRIMARY KEY, expires_at TIMESTAMPTZ NOT NULL)"]
        self._own = pool is None
        self._pool = _pool(url, pool, type(self).__name__, schema)
        self._retention = retention

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        with self._pool.connection() as conn:
            row = conn.execute(
                f"INSERT INTO {self._table} (nonce, expires_at) VALUES (%s, now() + %s * interval '1 second')"
                f" ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at"
                f" WHERE {self._table}.expires_at <= now() RETURNING nonce",
                (nonce, _seconds(expires_at, self._retention)),
            ).fetchone()
        return row is not None

    def release(self, nonce: str) -> None:
        with self._pool.connection() as conn:
            conn.execute(f"DELETE FROM {self._table} WHERE nonce = %s", (nonce,))

    def close(self) -> None:
        if self._own:
            self._pool.close()
