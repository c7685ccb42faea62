"""Retrieval: documents, embedding models and vector stores behind one SPI.

- :class:`Document` (id, text, flat metadata, optional media; ``score`` on search results).
- :class:`EmbeddingModel`: implement ``embed_batch``; ``embed``/``aembed`` batch and keep order.
  Wire models live in ``providers`` (OpenAI ``/v1/embeddings``, Ollama ``/api/embed``).
- :class:`VectorStore` / :class:`AsyncVectorStore` (same method names): ``add`` (an upsert),
  ``delete``, ``delete_where``, ``search(SearchRequest)`` with ``top_k``, ``score_threshold`` and a
  portable metadata :data:`Filter` built from :class:`Key`.
- Stores: in memory here; SQLite (``chatclient[sqlite-vec]``) and PostgreSQL with pgvector
  (``chatclient[pgvector]``), whose drivers load only when such a store is made.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .document import Document, MetadataValue
    from .embedding import Embedding, EmbeddingModel
    from .errors import EmbeddingError, RetrievalError, VectorStoreError
    from .filters import And, Comparison, Filter, Key, Not, Or, matches
    from .memory import AsyncInMemoryVectorStore, InMemoryVectorStore
    from .postgres import AsyncPgVectorStore, PgVectorStore
    from .sqlite import AsyncSqliteVectorStore, SqliteVectorStore
    from .store import AsyncVectorStore, SearchRequest, VectorStore
    from .threaded import ThreadedVectorStore

__all__ = [
    "And",
    "AsyncInMemoryVectorStore",
    "AsyncPgVectorStore",
    "AsyncSqliteVectorStore",
    "AsyncVectorStore",
    "Comparison",
    "Document",
    "Embedding",
    "EmbeddingError",
    "EmbeddingModel",
    "Filter",
    "InMemoryVectorStore",
    "Key",
    "MetadataValue",
    "Not",
    "Or",
    "PgVectorStore",
    "RetrievalError",
    "SearchRequest",
    "SqliteVectorStore",
    "ThreadedVectorStore",
    "VectorStore",
    "VectorStoreError",
    "matches",
]

__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".document": ["Document", "MetadataValue"],
        ".embedding": ["Embedding", "EmbeddingModel"],
        ".errors": ["EmbeddingError", "RetrievalError", "VectorStoreError"],
        ".filters": ["And", "Comparison", "Filter", "Key", "Not", "Or", "matches"],
        ".memory": ["AsyncInMemoryVectorStore", "InMemoryVectorStore"],
        ".sqlite": ["AsyncSqliteVectorStore", "SqliteVectorStore"],
        ".postgres": ["AsyncPgVectorStore", "PgVectorStore"],
        ".store": ["AsyncVectorStore", "SearchRequest", "VectorStore"],
        ".threaded": ["ThreadedVectorStore"],
    },
)
