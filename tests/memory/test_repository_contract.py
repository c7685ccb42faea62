"""The session-repository contract on every backend and face, against real servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chatclient.memory import AsyncInMemorySessionRepository, AsyncSessionRepository, InMemorySessionRepository
from chatclient.testing.memory import (
    CompactionContract,
    LeaseContract,
    ProviderTurn,
    SessionRepositoryContract,
    SyncAsAsync,
)
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from tests.memory.provider_turns import provider_turns

RECORDED_TURNS = provider_turns()

BACKENDS = ["memory", "sqlite", "redis", "postgres"]


async def open_repository(backend: str, face: str, tmp_path: Path, prefix: str) -> AsyncSessionRepository:
    if backend == "memory":
        return AsyncInMemorySessionRepository() if face == "async" else SyncAsAsync(InMemorySessionRepository())
    if backend == "sqlite":
        from chatclient.memory.sqlite import AsyncSqliteSessionRepository, SqliteSessionRepository

        path = tmp_path / "sessions.db"
        if face == "async":
            return AsyncSqliteSessionRepository(path, prefix=prefix)
        return SyncAsAsync(SqliteSessionRepository(path, prefix=prefix))
    if backend == "redis":
        from chatclient.memory.redis import AsyncRedisSessionRepository, RedisSessionRepository

        url = server_url(REDIS_URL)
        if face == "async":
            return AsyncRedisSessionRepository(url, prefix=prefix)
        return SyncAsAsync(RedisSessionRepository(url, prefix=prefix))
    from chatclient.memory.postgres import AsyncPostgresSessionRepository, PostgresSessionRepository

    url = server_url(POSTGRES_URL)
    if face == "async":
        repo = AsyncPostgresSessionRepository(url, prefix=prefix)
        await repo.open()
        return repo
    return SyncAsAsync(PostgresSessionRepository(url, prefix=prefix))


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
class TestSessionRepository(SessionRepositoryContract, CompactionContract, LeaseContract):
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
