"""The session-repository contract on every backend and face, against real servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chatclient.memory import AsyncInMemorySessionRepository, AsyncSessionRepository, InMemorySessionRepository
from chatclient.testing.memory import (
    CompactionContract,
    ExpiringFactory,
    ExpiryContract,
    FakeClock,
    LeaseContract,
    ProviderTurn,
    PruneContract,
    SessionRepositoryContract,
    SyncAsAsync,
)
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from tests.memory.provider_turns import provider_turns

RECORDED_TURNS = provider_turns()

BACKENDS = ["memory", "sqlite", "redis", "postgres"]


async def open_repository(
    backend: str, face: str, tmp_path: Path, prefix: str, **options: Any
) -> AsyncSessionRepository:
    """``options``: ``ttl`` and ``clock``, passed to the backend."""
    if backend == "memory":
        memory = InMemorySessionRepository(**options)
        return AsyncInMemorySessionRepository(memory) if face == "async" else SyncAsAsync(memory)
    if backend == "sqlite":
        from chatclient.memory.sqlite import AsyncSqliteSessionRepository, SqliteSessionRepository

        path = tmp_path / "sessions.db"
        if face == "async":
            return AsyncSqliteSessionRepository(path, prefix=prefix, **options)
        return SyncAsAsync(SqliteSessionRepository(path, prefix=prefix, **options))
    if backend == "redis":
        from chatclient.memory.redis import AsyncRedisSessionRepository, RedisSessionRepository

        url = server_url(REDIS_URL)
        if face == "async":
            return AsyncRedisSessionRepository(url, prefix=prefix, **options)
        return SyncAsAsync(RedisSessionRepository(url, prefix=prefix, **options))
    from chatclient.memory.postgres import AsyncPostgresSessionRepository, PostgresSessionRepository

    url = server_url(POSTGRES_URL)
    if face == "async":
        repo = AsyncPostgresSessionRepository(url, prefix=prefix, **options)
        await repo.open()
        return repo
    return SyncAsAsync(PostgresSessionRepository(url, prefix=prefix, **options))


async def close_repository(repo: object) -> None:
    inner = getattr(repo, "sync", repo)
    if isinstance(repo, SyncAsAsync):
        repo.close()
    close = getattr(inner, "close", None)
    if close is not None:
        result = close()
        if hasattr(result, "__await__"):
            await result


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("backend", BACKENDS)
class TestSessionRepository(
    SessionRepositoryContract, CompactionContract, LeaseContract, ExpiryContract, PruneContract
):
    @pytest.fixture
    def provider_turns(self) -> list[ProviderTurn]:
        """The turns the providers' mappings parse from the recorded traffic (tests/memory/provider_turns.py)."""
        return RECORDED_TURNS

    @pytest.fixture
    async def repository(
        self, backend: str, face: str, tmp_path: Path, prefix: str
    ) -> AsyncIterator[AsyncSessionRepository]:
        repo = await open_repository(backend, face, tmp_path, prefix)
        yield repo
        await close_repository(repo)

    @pytest.fixture
    def server_expiry(self, backend: str) -> bool:
        return backend == "redis"  # PEXPIRE: the server's clock

    @pytest.fixture
    def server_now(self, backend: str) -> bool:
        return backend == "postgres"  # now(): the server's clock

    @pytest.fixture
    async def expiring(self, backend: str, face: str, tmp_path: Path, prefix: str) -> AsyncIterator[ExpiringFactory]:
        opened: list[AsyncSessionRepository] = []

        async def make(ttl: float, clock: FakeClock) -> AsyncSessionRepository:
            opened.append(await open_repository(backend, face, tmp_path, f"{prefix}x", ttl=ttl, clock=clock))
            return opened[-1]

        yield make
        for repo in opened:
            await close_repository(repo)
