"""A nonce ledger in an SQLite file, shared by the processes of one machine (beside
``SqlitePendingToolCallStore``): an insert that succeeds once per nonce, an expired entry reused.

The async faces (:class:`AsyncSqliteNonceLedger`, :class:`AsyncSqlitePendingToolCallStore`) run
each call of the sync one in a worker thread (one connection per thread), so the loop never waits
on the file."""

from __future__ import annotations

import time
from pathlib import Path

from .._storage.sql import check_prefix
from .._storage.sqlite import SqliteDatabase
from .._storage.threads import in_thread
from ..tools.confirmation import PendingToolCalls
from .outage import store_call
from .state import SqlitePendingToolCallStore

__all__ = ["AsyncSqliteNonceLedger", "AsyncSqlitePendingToolCallStore", "SqliteNonceLedger"]

_WEEK = 7 * 24 * 3600.0


class SqliteNonceLedger:
    """Redeemed nonces in table ``{prefix}nonce`` of the file ``path``, kept until their state would
    expire (or for ``retention`` seconds when it has no expiry)."""

    def __init__(self, path: str | Path, *, prefix: str = "chatclient_", retention: float = _WEEK) -> None:
        self._table = f"{check_prefix(prefix)}nonce"
        self._db = SqliteDatabase(path)
        self._retention = retention
        self._db.connection().execute(
            f"CREATE TABLE IF NOT EXISTS {self._table} (nonce TEXT PRIMARY KEY, expires_at REAL NOT NULL)"
        )

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        now = time.time()
        keep_until = expires_at if expires_at is not None else now + self._retention
        sql = (
            f"INSERT INTO {self._table} (nonce, expires_at) VALUES (?, ?) ON CONFLICT (nonce) DO UPDATE"
            f" SET expires_at = excluded.expires_at WHERE {self._table}.expires_at <= ? RETURNING nonce"
        )
        with store_call(self, "redeem"):
            row = self._db.connection().execute(sql, (nonce, keep_until, now)).fetchone()
        return row is not None

    def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            self._db.connection().execute(f"DELETE FROM {self._table} WHERE nonce = ?", (nonce,))

    def close(self) -> None:
        self._db.close()


class AsyncSqliteNonceLedger:
    """The async face of :class:`SqliteNonceLedger`."""

    def __init__(self, path: str | Path, *, prefix: str = "chatclient_", retention: float = _WEEK) -> None:
        self.sync = SqliteNonceLedger(path, prefix=prefix, retention=retention)

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        return await in_thread(lambda: self.sync.redeem(nonce, expires_at))

    async def release(self, nonce: str) -> None:
        await in_thread(lambda: self.sync.release(nonce))

    async def close(self) -> None:
        """Close the store's connections (as the sync face's ``close``)."""
        self.sync.close()


class AsyncSqlitePendingToolCallStore:
    """The async face of :class:`~chatclient.pending.state.SqlitePendingToolCallStore`."""

    def __init__(
        self, path: str | Path, ttl: float | None = 3600.0, *, prefix: str = "chatclient_", secret: bytes | None = None
    ) -> None:
        self.sync = SqlitePendingToolCallStore(path, ttl=ttl, prefix=prefix, secret=secret)

    async def save(self, pending: PendingToolCalls) -> str:
        return await in_thread(lambda: self.sync.save(pending))

    async def take(self, state_id: str) -> PendingToolCalls:
        return await in_thread(lambda: self.sync.take(state_id))

    async def peek(self, state_id: str) -> PendingToolCalls:
        return await in_thread(lambda: self.sync.peek(state_id))

    async def discard(self, state_id: str) -> bool:
        return await in_thread(lambda: self.sync.discard(state_id))

    async def progress(self, state_id: str) -> tuple[int, str | None]:
        return await in_thread(lambda: self.sync.progress(state_id))

    async def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        return await in_thread(lambda: self.sync.record_progress(state_id, version, entry))

    async def purge_expired(self) -> int:
        return await in_thread(self.sync.purge_expired)

    async def close(self) -> None:
        """Close the store's connections (as the sync face's ``close``)."""
        self.sync.close()
