"""Pending-state stores and nonce ledgers keep their contracts on every backend (real servers)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatclient.errors import PendingStateNotFoundError
from chatclient.pending.state import (
    AsyncInMemoryNonceLedger,
    AsyncInMemoryPendingToolCallStore,
    InMemoryNonceLedger,
    InMemoryPendingToolCallStore,
    SqlitePendingToolCallStore,
)
from chatclient.testing.pending import (
    AsyncNonceLedgerContract,
    AsyncPendingToolCallStoreContract,
    NonceLedgerContract,
    PeekablePendingStoreContract,
    sample_pending,
)
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

BACKENDS = ["memory", "sqlite", "redis", "postgres"]


def make_store(backend: str, tmp_path: Path, prefix: str, ttl: float) -> Any:
    if backend == "memory":
        return InMemoryPendingToolCallStore(ttl=ttl)
    if backend == "sqlite":
        return SqlitePendingToolCallStore(tmp_path / "pending.db", ttl=ttl, prefix=prefix)
    if backend == "redis":
        from chatclient.pending.redis import RedisPendingToolCallStore

        return RedisPendingToolCallStore(server_url(REDIS_URL), prefix=prefix, ttl=ttl)
    from chatclient.pending.postgres import PostgresPendingToolCallStore

    return PostgresPendingToolCallStore(server_url(POSTGRES_URL), prefix=prefix, ttl=ttl)


def close(thing: Any) -> None:
    if hasattr(thing, "close"):
        thing.close()


class StoreFixtures:
    @pytest.fixture
    def store(self, backend: str, tmp_path: Path, prefix: str) -> Iterator[Any]:
        store = make_store(backend, tmp_path, prefix, 3600.0)
        yield store
        close(store)

    @pytest.fixture
    def expiring_store(self, backend: str, tmp_path: Path, prefix: str) -> Iterator[Any]:
        store = make_store(backend, tmp_path, prefix, 0.1)
        yield store
        close(store)


@pytest.mark.parametrize("backend", BACKENDS)
class TestPeekablePendingStore(StoreFixtures, PeekablePendingStoreContract):
    pass


@pytest.mark.parametrize("backend", BACKENDS)
class TestNonceLedger(NonceLedgerContract):
    @pytest.fixture
    def ledger(self, backend: str, prefix: str, tmp_path: Path) -> Iterator[Any]:
        if backend == "memory":
            yield InMemoryNonceLedger()
            return
        if backend == "sqlite":
            from chatclient.pending.sqlite import SqliteNonceLedger

            ledger: Any = SqliteNonceLedger(tmp_path / "nonces.db", prefix=prefix)
        elif backend == "redis":
            from chatclient.pending.redis import RedisNonceLedger

            ledger = RedisNonceLedger(server_url(REDIS_URL), prefix=prefix)
        else:
            from chatclient.pending.postgres import PostgresNonceLedger

            ledger = PostgresNonceLedger(server_url(POSTGRES_URL), prefix=prefix)
        yield ledger
        close(ledger)


async def make_async_store(backend: str, tmp_path: Path, prefix: str, ttl: float) -> Any:
    if backend == "memory":
        return AsyncInMemoryPendingToolCallStore(ttl=ttl)
    if backend == "sqlite":
        from chatclient.pending.sqlite import AsyncSqlitePendingToolCallStore

        return AsyncSqlitePendingToolCallStore(tmp_path / "pending.db", ttl=ttl, prefix=prefix)
    if backend == "redis":
        from chatclient.pending.redis import AsyncRedisPendingToolCallStore

        return AsyncRedisPendingToolCallStore(server_url(REDIS_URL), prefix=prefix, ttl=ttl)
    from chatclient.pending.postgres import AsyncPostgresPendingToolCallStore

    store = AsyncPostgresPendingToolCallStore(server_url(POSTGRES_URL), prefix=prefix, ttl=ttl)
    await store.open()
    return store


async def aclose(thing: Any) -> None:
    result = thing.close() if hasattr(thing, "close") else None
    if result is not None:
        await result


@pytest.mark.parametrize("backend", BACKENDS)
class TestAsyncPendingStore(AsyncPendingToolCallStoreContract):
    @pytest.fixture
    async def astore(self, backend: str, tmp_path: Path, prefix: str) -> AsyncIterator[Any]:
        store = await make_async_store(backend, tmp_path, prefix, 3600.0)
        yield store
        await aclose(store)

    @pytest.fixture
    async def aexpiring_store(self, backend: str, tmp_path: Path, prefix: str) -> AsyncIterator[Any]:
        store = await make_async_store(backend, tmp_path, prefix, 0.1)
        yield store
        await aclose(store)


@pytest.mark.parametrize("backend", BACKENDS)
class TestAsyncNonceLedger(AsyncNonceLedgerContract):
    @pytest.fixture
    async def aledger(self, backend: str, prefix: str, tmp_path: Path) -> AsyncIterator[Any]:
        ledger: Any
        if backend == "memory":
            ledger = AsyncInMemoryNonceLedger()
        elif backend == "sqlite":
            from chatclient.pending.sqlite import AsyncSqliteNonceLedger

            ledger = AsyncSqliteNonceLedger(tmp_path / "nonces.db", prefix=prefix)
        elif backend == "redis":
            from chatclient.pending.redis import AsyncRedisNonceLedger

            ledger = AsyncRedisNonceLedger(server_url(REDIS_URL), prefix=prefix)
        else:
            from chatclient.pending.postgres import AsyncPostgresNonceLedger

            ledger = AsyncPostgresNonceLedger(server_url(POSTGRES_URL), prefix=prefix)
            await ledger.open()
        yield ledger
        await aclose(ledger)


def test_sqlite_store_prefix_names_its_table_and_the_default_keeps_the_old_one(tmp_path: Path) -> None:
    import sqlite3

    from chatclient.errors import ConfigurationError

    path = tmp_path / "pending.db"
    old = SqlitePendingToolCallStore(path)  # a database made before `prefix=` existed keeps working
    first, second = sample_pending(), sample_pending()
    kept = old.save(first)
    mine = SqlitePendingToolCallStore(path, prefix="app_")
    ours = mine.save(second)
    tables = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {
        "chatclient_pending_tool_calls",
        "chatclient_pending_journal",
        "app_pending_tool_calls",
        "app_pending_journal",
    }
    with pytest.raises(PendingStateNotFoundError):
        mine.take(kept)  # separate tables
    with pytest.raises(PendingStateNotFoundError):
        old.take(ours)
    assert (old.take(kept), mine.take(ours)) == (first, second)
    with pytest.raises(ConfigurationError):
        SqlitePendingToolCallStore(path, prefix="bad-prefix; DROP")
    old.close()
    mine.close()
