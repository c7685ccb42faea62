"""The SQLite store (sqlite-vec) runs the vector store contract through both faces, on a file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chatclient.retrieval import AsyncVectorStore, ThreadedVectorStore
from chatclient.testing.retrieval import ScriptedEmbeddingModel, VectorStoreContract

pytest.importorskip("sqlite_vec")
from chatclient.retrieval.sqlite import AsyncSqliteVectorStore, SqliteVectorStore


class TestSqliteStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, embedding_model: ScriptedEmbeddingModel, tmp_path: Path) -> AsyncIterator[AsyncVectorStore]:
        sync = SqliteVectorStore(tmp_path / "vectors.db", embedding_model)
        yield ThreadedVectorStore(sync)
        sync.close()


class TestAsyncSqliteStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, embedding_model: ScriptedEmbeddingModel, tmp_path: Path) -> AsyncIterator[AsyncVectorStore]:
        store = AsyncSqliteVectorStore(tmp_path / "vectors.db", embedding_model)
        yield store
        await store.close()
