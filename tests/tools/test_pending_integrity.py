"""A pending state rewritten in storage is refused: keyed stores on every backend (real servers),
and the unkeyed digest's reach (a careless writer is caught, one who recomputes it is not)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatclient.errors import ConfigurationError, PendingStateTamperedError
from chatclient.pending.state import (
    AsyncInMemoryPendingToolCallStore,
    InMemoryPendingToolCallStore,
    SqlitePendingToolCallStore,
)
from chatclient.testing.pending import (
    STORE_SECRET,
    TAMPERINGS,
    AsyncKeyedPendingStoreContract,
    KeyedPendingStoreContract,
    forge,
    sample_pending,
)
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from chatclient.tools.confirmation import PendingToolCalls

BACKENDS = ["memory", "sqlite", "redis", "postgres"]
Edit = Callable[[str], str]


@pytest.fixture
def prefix() -> str:
    return f"k{uuid.uuid4().hex[:12]}_"


def make_store(backend: str, tmp_path: Path, prefix: str, secret: bytes | None) -> Any:
    if backend == "memory":
        return InMemoryPendingToolCallStore(secret=secret)
    if backend == "sqlite":
        return SqlitePendingToolCallStore(tmp_path / "pending.db", prefix=prefix, secret=secret)
    if backend == "redis":
        from chatclient.pending.redis import RedisPendingToolCallStore

        return RedisPendingToolCallStore(server_url(REDIS_URL), prefix=prefix, secret=secret)
    from chatclient.pending.postgres import PostgresPendingToolCallStore

    return PostgresPendingToolCallStore(server_url(POSTGRES_URL), prefix=prefix, secret=secret)


async def make_async_store(backend: str, tmp_path: Path, prefix: str, secret: bytes | None) -> Any:
    if backend == "memory":
        return AsyncInMemoryPendingToolCallStore(secret=secret)
    if backend == "sqlite":
        from chatclient.pending.sqlite import AsyncSqlitePendingToolCallStore

        return AsyncSqlitePendingToolCallStore(tmp_path / "pending.db", prefix=prefix, secret=secret)
    if backend == "redis":
        from chatclient.pending.redis import AsyncRedisPendingToolCallStore

        return AsyncRedisPendingToolCallStore(server_url(REDIS_URL), prefix=prefix, secret=secret)
    from chatclient.pending.postgres import AsyncPostgresPendingToolCallStore

    store = AsyncPostgresPendingToolCallStore(server_url(POSTGRES_URL), prefix=prefix, secret=secret)
    await store.open()
    return store


def rewrite_sync(store: Any, state_id: str, edit: Edit) -> None:
    """What a writer with access to the backend (not to the secret) does: read the row, write another."""
    store = getattr(store, "sync", store)  # the in-memory and SQLite async faces wrap a sync store
    if isinstance(store, InMemoryPendingToolCallStore):
        text, deadline = store._states[state_id]
        store._states[state_id] = (edit(text), deadline)
    elif isinstance(store, SqlitePendingToolCallStore):
        db = store._connect()
        (text,) = db.execute(f"SELECT state FROM {store._table} WHERE id = ?", (state_id,)).fetchone()
        db.execute(f"UPDATE {store._table} SET state = ? WHERE id = ?", (edit(text), state_id))
    elif hasattr(store, "_redis"):
        key = store._prefix + state_id
        store._redis.set(key, edit(store._redis.get(key).decode()), keepttl=True)
    else:
        table = store._sql.table
        with store._pool.connection() as conn:
            (text,) = conn.execute(f"SELECT state FROM {table} WHERE id = %s", (state_id,)).fetchone()
            conn.execute(f"UPDATE {table} SET state = %s WHERE id = %s", (edit(text), state_id))


async def rewrite_async(store: Any, state_id: str, edit: Edit) -> None:
    if hasattr(store, "sync"):
        rewrite_sync(store, state_id, edit)
    elif hasattr(store, "_redis"):
        key = store._prefix + state_id
        await store._redis.set(key, edit((await store._redis.get(key)).decode()), keepttl=True)
    else:
        table = store._sql.table
        (text,) = await store._db.fetchone((f"SELECT state FROM {table} WHERE id = %s", (state_id,)))
        await store._db.fetchone((f"UPDATE {table} SET state = %s WHERE id = %s", (edit(text), state_id)))


def close(store: Any) -> None:
    if hasattr(store, "close"):
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
class TestKeyedStore(KeyedPendingStoreContract):
    @pytest.fixture
    def keyed_store(self, backend: str, tmp_path: Path, prefix: str) -> Iterator[Any]:
        store = make_store(backend, tmp_path, prefix, STORE_SECRET)
        yield store
        close(store)

    @pytest.fixture
    def rewrite(self) -> Any:
        return rewrite_sync


@pytest.mark.parametrize("backend", BACKENDS)
class TestAsyncKeyedStore(AsyncKeyedPendingStoreContract):
    @pytest.fixture
    async def akeyed_store(self, backend: str, tmp_path: Path, prefix: str) -> AsyncIterator[Any]:
        store = await make_async_store(backend, tmp_path, prefix, STORE_SECRET)
        yield store
        result = store.close() if hasattr(store, "close") else None
        if result is not None:
            await result

    @pytest.fixture
    def rewrite(self) -> Any:
        return rewrite_async


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_state_stored_with_one_secret_is_refused_under_another(backend: str, tmp_path: Path, prefix: str) -> None:
    ours = make_store(backend, tmp_path, prefix, STORE_SECRET)
    theirs = make_store(backend, tmp_path, prefix, b"another-secret-0123456789abcdef")
    pending = sample_pending()
    state_id = ours.save(pending)
    if backend == "memory":  # two in-memory stores share nothing: put the row where the other looks
        theirs._states[state_id] = ours._states[state_id]
    with pytest.raises(PendingStateTamperedError):
        theirs.peek(state_id)
    assert ours.take(state_id) == pending, "the refusal lost nothing"
    close(ours)
    close(theirs)


@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_without_a_secret_a_careless_rewrite_is_refused_but_a_recomputed_digest_is_not(
    backend: str, tmp_path: Path, prefix: str, tampering: str
) -> None:
    """What an unkeyed digest protects against, and what not (the README's security table)."""
    store = make_store(backend, tmp_path, prefix, None)
    careless, recomputed = store.save(sample_pending(3600.0)), store.save(sample_pending(3600.0))
    change = TAMPERINGS[tampering]
    rewrite_sync(store, careless, lambda text: change(PendingToolCalls.model_validate_json(text)).model_dump_json())
    rewrite_sync(store, recomputed, lambda text: forge(text, change))
    with pytest.raises(PendingStateTamperedError):
        store.take(careless)
    assert store.take(recomputed) is not None, "an unkeyed digest cannot stop a writer who recomputes it"
    close(store)


def test_a_secret_is_bytes_of_at_least_16() -> None:
    for bad in (b"short", "a-str-secret-0123456789abcdef"):
        with pytest.raises(ConfigurationError):
            InMemoryPendingToolCallStore(secret=bad)  # type: ignore[arg-type]
