"""Documents and vectors in PostgreSQL with pgvector (``pip install "chatclient[pgvector]"``: psycopg 3
and its pool; the server needs the pgvector extension).

One table, ``{prefix}vector_document``: ``id`` (the key), ``text``, ``metadata`` (jsonb),
``media`` (jsonb) and ``embedding vector(N)`` with an HNSW index on cosine distance. Search orders
by that distance, so the index answers it; the portable filter becomes jsonb conditions.

HNSW is approximate: it looks at ``hnsw.ef_search`` candidates (40 by default). A search for more
than that raises it for its own transaction, and a filtered search on pgvector 0.8 or later turns on
iterative index scans (``strict_order``), so a selective filter still gets ``top_k`` results.

The extension is created when the store opens if the user may (pgvector is not a trusted
extension: that takes a superuser); otherwise the error says what to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._storage.postgres import CONNECT_TIMEOUT, AsyncPool, arun_on, open_pool, run_on, schema_lock
from .._storage.sql import Flow, check_prefix
from ..errors import ConfigurationError
from ._codec import decode, encode_media, encode_metadata, vector_text
from ._filter_sql import POSTGRES, to_sql
from .document import Document
from .embedding import EmbeddingModel
from .errors import VectorStoreError
from .filters import Filter
from .store import SearchRequest, aquery_vector, avectors_for, check_vector, query_vector, vectors_for

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AsyncPgVectorStore", "PgVectorStore"]

T = TypeVar("T")
_ROWS_PER_INSERT = 100
_DEFAULT_EF_SEARCH = 40  # pgvector's default: a search for more results raises it
_MAX_EF_SEARCH = 1000  # pgvector's limit


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


class _Sql:
    """The statements of one table, shared by the sync and async faces."""

    def __init__(self, prefix: str, dimensions: int | None, ef_search: int | None = None) -> None:
        if ef_search is not None and not (isinstance(ef_search, int) and 1 <= ef_search <= _MAX_EF_SEARCH):
            raise ConfigurationError(f"ef_search is from 1 to {_MAX_EF_SEARCH} candidates, got {ef_search!r}")
        self.table = f"{check_prefix(prefix)}vector_document"
        self.dimensions = dimensions
        self.ef_search = ef_search if ef_search is not None else _DEFAULT_EF_SEARCH
        self.iterative_scan = False  # pgvector >= 0.8, learnt when the schema is made

    def schema(self) -> Flow[None]:
        yield schema_lock(self.table)
        rows = yield ("SELECT extversion FROM pg_extension WHERE extname = 'vector'", ())
        if not rows:
            yield from self._create_extension()
            rows = yield ("SELECT extversion FROM pg_extension WHERE extname = 'vector'", ())
        self.iterative_scan = _version(rows[0][0]) >= (0, 8)
        rows = yield (
            "SELECT a.atttypmod FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding'",
            (self.table,),
        )
        held = int(rows[0][0]) if rows and rows[0][0] > 0 else None
        if held is not None and self.dimensions is not None and held != self.dimensions:
            raise VectorStoreError(
                f"Table {self.table} holds vectors of {held} dimensions, but this store was given {self.dimensions}"
            )
        self.dimensions = self.dimensions or held
        if self.dimensions is None:
            raise ConfigurationError(
                "PgVectorStore needs the vector dimension to make its table: pass dimensions=..., or an "
                "embedding model whose dimensions are set"
            )
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.table} (id text PRIMARY KEY, text text NOT NULL, "
            f"metadata jsonb NOT NULL, media jsonb, embedding vector({int(self.dimensions)}) NOT NULL)",
            (),
        )
        yield (
            f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} USING hnsw (embedding vector_cosine_ops)",
            (),
        )

    def _create_extension(self) -> Flow[None]:
        available = yield ("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'", ())
        if not available:
            raise VectorStoreError(
                "This PostgreSQL server has no pgvector extension installed (Debian/Ubuntu: the "
                "postgresql-<major>-pgvector package; see docs/retrieval.md for other ways)"
            )
        superuser = yield ("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", ())
        if not (superuser and superuser[0][0]):
            raise VectorStoreError(
                "The pgvector extension is installed on the server but not created in this database, and "
                "creating it takes a superuser: run CREATE EXTENSION vector; in this database once"
            )
        yield ("CREATE EXTENSION IF NOT EXISTS vector", ())

    def put(self, documents: Sequence[Document], vectors: list[list[float]]) -> Flow[None]:
        for vector in vectors:
            check_vector(vector, self.dimensions)
        for start in range(0, len(documents), _ROWS_PER_INSERT):
            rows = list(zip(documents[start : start + _ROWS_PER_INSERT], vectors[start:], strict=False))
            values = ", ".join("(%s, %s, %s::jsonb, %s::jsonb, %s::vector)" for _ in rows)
            params: list[Any] = []
            for document, vector in rows:
                params += [document.id, document.text, encode_metadata(document), encode_media(document)]
                params.append(vector_text(vector))
            yield (
                f"INSERT INTO {self.table} (id, text, metadata, media, embedding) VALUES {values} "
                "ON CONFLICT (id) DO UPDATE SET text = excluded.text, metadata = excluded.metadata, "
                "media = excluded.media, embedding = excluded.embedding",
                tuple(params),
            )

    def delete(self, ids: Sequence[str]) -> Flow[int]:
        unique = list(dict.fromkeys([ids] if isinstance(ids, str) else ids))
        rows = yield (
            f"WITH gone AS (DELETE FROM {self.table} WHERE id = ANY(%s) RETURNING 1) SELECT count(*) FROM gone",
            (unique,),
        )
        return int(rows[0][0])

    def delete_where(self, expression: Filter) -> Flow[int]:
        condition, params = to_sql(POSTGRES, expression)
        rows = yield (
            f"WITH gone AS (DELETE FROM {self.table} WHERE {condition} RETURNING 1) SELECT count(*) FROM gone",
            tuple(params),
        )
        return int(rows[0][0])

    def search(self, request: SearchRequest, vector: list[float]) -> Flow[list[Document]]:
        check_vector(vector, self.dimensions)
        ef_search = min(max(request.top_k, self.ef_search), _MAX_EF_SEARCH)
        if ef_search != _DEFAULT_EF_SEARCH:
            yield ("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
        if request.filter is not None and self.iterative_scan:
            yield ("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)", ())
        query = vector_text(vector)
        conditions: list[str] = []
        params: list[Any] = [query]
        if request.filter is not None:
            condition, filter_params = to_sql(POSTGRES, request.filter)
            conditions.append(f"({condition})")
            params += filter_params
        if request.score_threshold is not None:
            conditions.append("(embedding <=> %s::vector) <= %s")
            params += [query, 1.0 - float(request.score_threshold)]
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        params += [query, request.top_k]
        rows = yield (
            f"SELECT id, text, metadata, media, 1 - (embedding <=> %s::vector) FROM {self.table}{where} "
            "ORDER BY embedding <=> %s::vector, id LIMIT %s",
            tuple(params),
        )
        return [decode(*row) for row in rows]

    def needs_transaction(self, request: SearchRequest) -> bool:
        """``set_config(..., true)`` lasts for the transaction: only then is one needed."""
        ef_search = min(max(request.top_k, self.ef_search), _MAX_EF_SEARCH)
        return ef_search != _DEFAULT_EF_SEARCH or (request.filter is not None and self.iterative_scan)


def _failed(message: str) -> VectorStoreError:
    return VectorStoreError(message)


class PgVectorStore:
    """A :class:`~chatclient.retrieval.VectorStore` in PostgreSQL at ``url`` (or on ``pool``, a
    ``psycopg_pool.ConnectionPool`` to share). ``dimensions`` (or ``embedding_model.dimensions``, or
    an existing table's) fixes the vector size the table is made with. ``ef_search``: the HNSW
    candidates a search looks at (pgvector's 40 by default; more finds more of the exact top
    results and costs more; never fewer than ``top_k``)."""

    def __init__(
        self,
        url: str | None = None,
        embedding_model: EmbeddingModel | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        dimensions: int | None = None,
        prefix: str = "chatclient_",
        prepare_threshold: int | None = 5,
        connect_timeout: float = CONNECT_TIMEOUT,
        ef_search: int | None = None,
    ) -> None:
        self.embedding_model = embedding_model
        self._own_pool = pool is None
        wanted = dimensions if dimensions is not None else getattr(embedding_model, "dimensions", None)
        self._sql = _Sql(prefix, wanted, ef_search)
        self._pool: ConnectionPool[Any] = open_pool(
            url,
            pool,
            name=type(self).__name__,
            schema=self._sql.schema(),
            failed=_failed,
            prepare_threshold=prepare_threshold,
            connect_timeout=connect_timeout,
        )

    @property
    def dimensions(self) -> int | None:
        return self._sql.dimensions

    def _run(self, flow: Flow[T], *, transaction: bool = True) -> T:
        with self._pool.connection() as conn:
            return run_on(conn, flow, transaction=transaction)

    def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        vectors = vectors_for(documents, embeddings, self.embedding_model)
        if vectors:
            self._run(self._sql.put(documents, vectors))

    def delete(self, ids: Sequence[str]) -> int:
        return self._run(self._sql.delete(ids), transaction=False)

    def delete_where(self, filter: Filter) -> int:
        return self._run(self._sql.delete_where(filter), transaction=False)

    def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        vector = query_vector(request, self.embedding_model)
        return self._run(self._sql.search(request, vector), transaction=self._sql.needs_transaction(request))

    def close(self) -> None:
        if self._own_pool:
            self._pool.close()


class AsyncPgVectorStore:
    """:class:`PgVectorStore` on a ``psycopg_pool.AsyncConnectionPool``; ``await open()`` first
    (it opens the pool when the store owns it, and makes the table)."""

    def __init__(
        self,
        url: str | None = None,
        embedding_model: EmbeddingModel | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        dimensions: int | None = None,
        prefix: str = "chatclient_",
        prepare_threshold: int | None = 5,
        connect_timeout: float = CONNECT_TIMEOUT,
        ef_search: int | None = None,
    ) -> None:
        self.embedding_model = embedding_model
        wanted = dimensions if dimensions is not None else getattr(embedding_model, "dimensions", None)
        self._sql = _Sql(prefix, wanted, ef_search)
        self._db = AsyncPool(
            url,
            pool,
            name=type(self).__name__,
            schema=self._sql.schema,
            failed=_failed,
            prepare_threshold=prepare_threshold,
            connect_timeout=connect_timeout,
        )

    @property
    def dimensions(self) -> int | None:
        return self._sql.dimensions

    async def open(self) -> None:
        await self._db.open()

    async def _run(self, flow: Flow[T], *, transaction: bool = True) -> T:
        async with self._db.connection() as conn:
            return await arun_on(conn, flow, transaction=transaction)

    async def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        vectors = await avectors_for(documents, embeddings, self.embedding_model)
        if vectors:
            await self._run(self._sql.put(documents, vectors))

    async def delete(self, ids: Sequence[str]) -> int:
        return await self._run(self._sql.delete(ids), transaction=False)

    async def delete_where(self, filter: Filter) -> int:
        return await self._run(self._sql.delete_where(filter), transaction=False)

    async def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        vector = await aquery_vector(request, self.embedding_model)
        return await self._run(self._sql.search(request, vector), transaction=self._sql.needs_transaction(request))

    async def close(self) -> None:
        await self._db.close()
