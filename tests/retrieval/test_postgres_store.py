"""The pgvector store runs the vector store contract through both faces, on a real server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from chatclient.retrieval import AsyncVectorStore, ThreadedVectorStore
from chatclient.testing.retrieval import ScriptedEmbeddingModel, VectorStoreContract
from chatclient.testing.servers import PGVECTOR_URL, server_url

pytest.importorskip("psycopg")
from chatclient.retrieval.postgres import AsyncPgVectorStore, PgVectorStore


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:12]}_"


@pytest.fixture
def pgvector_url() -> str:
    return server_url(PGVECTOR_URL)


def _drop(url: str, prefix: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {prefix}vector_document")


class TestPgVectorStore(VectorStoreContract):
    @pytest.fixture
    async def store(
        self, embedding_model: ScriptedEmbeddingModel, pgvector_url: str, prefix: str
    ) -> AsyncIterator[AsyncVectorStore]:
        sync = PgVectorStore(pgvector_url, embedding_model, dimensions=3, prefix=prefix)
        yield ThreadedVectorStore(sync)
        sync.close()
        _drop(pgvector_url, prefix)


class TestAsyncPgVectorStore(VectorStoreContract):
    @pytest.fixture
    async def store(
        self, embedding_model: ScriptedEmbeddingModel, pgvector_url: str, prefix: str
    ) -> AsyncIterator[AsyncVectorStore]:
        store = AsyncPgVectorStore(pgvector_url, embedding_model, dimensions=3, prefix=prefix)
        await store.open()
        yield store
        await store.close()
        _drop(pgvector_url, prefix)
