"""The pgvector store runs the vector store contract through both faces, on a real server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

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


def test_a_server_without_pgvector_is_a_clear_error() -> None:
    """The shared test PostgreSQL (Debian's, no pgvector package) stands for such a server."""
    from chatclient.retrieval import VectorStoreError
    from chatclient.testing.servers import POSTGRES_URL

    url = server_url(POSTGRES_URL)
    import psycopg

    with psycopg.connect(url) as conn:
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchall()
    if available:
        pytest.skip("this server has pgvector")
    with pytest.raises(VectorStoreError, match="no pgvector extension installed"):
        PgVectorStore(url, dimensions=3, prefix="t_nopgvector_")


def test_the_table_keeps_its_dimension(pgvector_url: str, prefix: str) -> None:
    from chatclient.errors import ConfigurationError
    from chatclient.retrieval import VectorStoreError

    first = PgVectorStore(pgvector_url, dimensions=3, prefix=prefix)
    try:
        with pytest.raises(VectorStoreError, match="holds vectors of 3 dimensions"):
            PgVectorStore(pgvector_url, dimensions=4, prefix=prefix)
        again = PgVectorStore(pgvector_url, prefix=prefix)  # an existing table tells its dimension
        assert again.dimensions == 3
        again.close()
    finally:
        first.close()
        _drop(pgvector_url, prefix)
    with pytest.raises(ConfigurationError, match="needs the vector dimension"):
        PgVectorStore(pgvector_url, prefix=prefix)


def test_an_unreachable_server_names_the_address_without_the_password() -> None:
    from chatclient.retrieval import VectorStoreError

    url = "postgresql://someone:s3cret-pw@127.0.0.1:1/db"
    with pytest.raises(VectorStoreError) as caught:
        PgVectorStore(url, dimensions=3, connect_timeout=1)
    assert "127.0.0.1:1" in str(caught.value) and "s3cret-pw" not in str(caught.value)


async def test_the_async_store_refuses_a_dimension_change_and_closes_its_pool(pgvector_url: str, prefix: str) -> None:
    from chatclient.retrieval import VectorStoreError

    first = AsyncPgVectorStore(pgvector_url, dimensions=3, prefix=prefix)
    await first.open()
    try:
        second = AsyncPgVectorStore(pgvector_url, dimensions=5, prefix=prefix)
        with pytest.raises(VectorStoreError, match="holds vectors of 3 dimensions"):
            await second.open()
        assert second._db.pool is None  # closed, not left reconnecting in the background
    finally:
        await first.close()
        _drop(pgvector_url, prefix)


def test_ef_search_is_set_for_the_search_that_needs_it(pgvector_url: str, prefix: str) -> None:
    """The setting lasts for the search's own transaction: the pooled connection is left as it was."""
    from chatclient.errors import ConfigurationError
    from chatclient.retrieval import Document, SearchRequest

    store = PgVectorStore(pgvector_url, dimensions=3, prefix=prefix, ef_search=200)
    try:
        store.add([Document(f"d{i}", "x") for i in range(3)], [[1.0, float(i), 0.0] for i in range(3)])
        seen: list[str] = []
        original = store._sql.search

        def spying(request: SearchRequest, vector: list[float]) -> Any:
            flow = original(request, vector)
            rows = None
            try:
                while True:
                    statement = flow.send(rows)  # type: ignore[arg-type]  # None starts the flow
                    seen.append(statement[0])
                    rows = yield statement
            except StopIteration as done:
                return done.value

        store._sql.search = spying  # type: ignore[method-assign]
        assert len(store.search(SearchRequest(vector=[1.0, 0.0, 0.0], top_k=2))) == 2
        assert any("hnsw.ef_search" in sql for sql in seen)
        with store._pool.connection() as conn:
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == ("40",)
    finally:
        store.close()
        _drop(pgvector_url, prefix)
    with pytest.raises(ConfigurationError, match="ef_search"):
        PgVectorStore(pgvector_url, dimensions=3, prefix=prefix, ef_search=0)
