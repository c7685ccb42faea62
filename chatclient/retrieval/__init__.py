"""Retrieval: documents, embedding models and vector stores behind one SPI.

- :class:`Document` (id, text, flat metadata, optional media; ``score`` on search results).
- :class:`EmbeddingModel`: implement ``embed_batch``; ``embed``/``aembed`` batch and keep order.
  Wire models live in ``providers`` (OpenAI ``/v1/embeddings``, Ollama ``/api/embed``).
- :class:`VectorStore` / :class:`AsyncVectorStore` (same method names): ``add`` (an upsert),
  ``delete``, ``delete_where``, ``search(SearchRequest)`` with ``top_k``, ``score_threshold`` and a
  portable metadata :data:`Filter` built from :class:`Key`.
- :class:`TokenTextSplitter` cuts documents into chunks of a token budget; :class:`TextReader` and
  :class:`MarkdownReader` read files, and :func:`register_reader` plugs in other formats.
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
    from .readers import DocumentReader, MarkdownReader, TextReader, read_documents, register_reader
    from .splitter import TokenTextSplitter
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
    "DocumentReader",
    "Embedding",
    "EmbeddingError",
    "EmbeddingModel",
    "Filter",
    "InMemoryVectorStore",
    "Key",
    "MarkdownReader",
    "MetadataValue",
    "Not",
    "Or",
    "PgVectorStore",
    "RetrievalError",
    "SearchRequest",
    "SqliteVectorStore",
    "TextReader",
    "ThreadedVectorStore",
    "TokenTextSplitter",
    "VectorStore",
    "VectorStoreError",
    "matches",
    "read_documents",
    "register_reader",
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
        ".readers": ["DocumentReader", "MarkdownReader", "TextReader", "read_documents", "register_reader"],
        ".splitter": ["TokenTextSplitter"],
        ".store": ["AsyncVectorStore", "SearchRequest", "VectorStore"],
        ".threaded": ["ThreadedVectorStore"],
    },
)
