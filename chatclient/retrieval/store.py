"""The vector store SPI (sync and async, same method names) and what every store shares: the
search request, turning documents into vectors, and checking those vectors.

Every store gives the same guarantees (the contract suite in :mod:`chatclient.testing.retrieval`
checks them): ``add`` replaces a document whose id the store holds; ``search`` returns at most
``top_k`` documents, best first (ties by id), each with ``score`` = cosine similarity to the query,
none below ``score_threshold``, all passing ``filter`` (:mod:`.filters` semantics).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError
from .document import Document
from .embedding import Embedding, EmbeddingModel
from .errors import VectorStoreError
from .filters import And, Comparison, Filter, Not, Or

__all__ = [
    "AsyncVectorStore",
    "SearchRequest",
    "VectorStore",
    "avectors_for",
    "aquery_vector",
    "query_vector",
    "vectors_for",
]

DEFAULT_TOP_K = 4
"""Spring AI's default: a few passages, enough to answer, few enough to fit a prompt."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to look for: a ``query`` text (embedded by the store's model) or a ready ``vector``;
    at most ``top_k`` results with ``score >= score_threshold``, passing ``filter``."""

    query: str | None = None
    top_k: int = DEFAULT_TOP_K
    score_threshold: float | None = None
    filter: Filter | None = None
    vector: Sequence[float] | None = None

    def __post_init__(self) -> None:
        if (self.query is None) == (self.vector is None):
            raise ConfigurationError("A SearchRequest needs exactly one of query (a text) or vector")
        if self.query is not None and not isinstance(self.query, str):
            raise ConfigurationError(f"SearchRequest.query must be a string, got {type(self.query).__name__}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise ConfigurationError(f"top_k must be a positive integer, got {self.top_k!r}")
        threshold = self.score_threshold
        if threshold is not None and not (isinstance(threshold, (int, float)) and -1.0 <= threshold <= 1.0):
            raise ConfigurationError(f"score_threshold is a cosine similarity between -1 and 1, got {threshold!r}")
        if self.filter is not None and not isinstance(self.filter, (Comparison, And, Or, Not)):
            raise ConfigurationError(f"filter must be a filter expression (Key(...) comparisons), got {self.filter!r}")
        if self.vector is not None:
            object.__setattr__(self, "vector", check_vector(self.vector))

    @classmethod
    def of(cls, request: SearchRequest | str) -> SearchRequest:
        """``request``, or a request for the text ``request`` with the defaults."""
        return request if isinstance(request, SearchRequest) else cls(query=request)


@runtime_checkable
class VectorStore(Protocol):
    """Documents and their vectors, searched by similarity."""

    def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        """Store ``documents`` (replacing those whose id is held), embedded by the store's model
        unless ``embeddings`` gives their vectors, in order. All or nothing."""
        ...

    def delete(self, ids: Sequence[str]) -> int:
        """Remove the documents with these ids; how many were held."""
        ...

    def delete_where(self, filter: Filter) -> int:
        """Remove every document that passes ``filter``; how many went."""
        ...

    def search(self, request: SearchRequest | str) -> list[Document]:
        """The closest documents, best first, each with its ``score``."""
        ...


@runtime_checkable
class AsyncVectorStore(Protocol):
    """:class:`VectorStore` for an event loop."""

    async def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None: ...

    async def delete(self, ids: Sequence[str]) -> int: ...

    async def delete_where(self, filter: Filter) -> int: ...

    async def search(self, request: SearchRequest | str) -> list[Document]: ...


def check_vector(vector: Sequence[float], dimensions: int | None = None) -> list[float]:
    """``vector`` as a list of finite floats, not all zero (cosine similarity is undefined for zero)."""
    if isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence):
        raise ConfigurationError(f"A vector is a list of floats, got {type(vector).__name__}")
    values = [float(x) for x in vector]
    if not values or not all(math.isfinite(x) for x in values):
        raise ConfigurationError("A vector must be a non-empty list of finite numbers")
    if not any(values):
        raise ConfigurationError("A zero vector has no direction: cosine similarity is undefined for it")
    if dimensions is not None and len(values) != dimensions:
        raise VectorStoreError(f"This store holds vectors of {dimensions} dimensions, got one of {len(values)}")
    return values


def _given(documents: Sequence[Document], embeddings: Sequence[Sequence[float]]) -> list[Embedding]:
    if len(embeddings) != len(documents):
        raise ConfigurationError(f"add() got {len(embeddings)} embeddings for {len(documents)} documents")
    return [check_vector(v) for v in embeddings]


def _checked_documents(documents: Sequence[Document]) -> Sequence[Document]:
    if isinstance(documents, Document) or not isinstance(documents, Sequence):
        raise ConfigurationError("add() takes a list of documents")
    for document in documents:
        if not isinstance(document, Document):
            raise ConfigurationError(f"add() takes Document values, got {type(document).__name__}")
    ids = [d.id for d in documents]
    if len(set(ids)) != len(ids):
        raise ConfigurationError("add() got two documents with the same id")
    return documents


def _model(model: EmbeddingModel | None) -> EmbeddingModel:
    if model is None:
        raise ConfigurationError(
            "This store has no embedding model: give one when making it, or pass the vectors "
            "(add(documents, embeddings=...), SearchRequest(vector=...))"
        )
    return model


def vectors_for(
    documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None, model: EmbeddingModel | None
) -> list[Embedding]:
    """The vector of each document: given, or embedded from its text by ``model``."""
    _checked_documents(documents)
    if embeddings is not None:
        return _given(documents, embeddings)
    if not documents:
        return []
    return [check_vector(v) for v in _model(model).embed([d.text for d in documents])]


async def avectors_for(
    documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None, model: EmbeddingModel | None
) -> list[Embedding]:
    _checked_documents(documents)
    if embeddings is not None:
        return _given(documents, embeddings)
    if not documents:
        return []
    return [check_vector(v) for v in await _model(model).aembed([d.text for d in documents])]


def query_vector(request: SearchRequest, model: EmbeddingModel | None) -> list[float]:
    """The request's vector, or its query embedded by ``model``."""
    if request.vector is not None:
        return list(request.vector)
    return check_vector(_model(model).embed([request.query or ""])[0])


async def aquery_vector(request: SearchRequest, model: EmbeddingModel | None) -> list[float]:
    if request.vector is not None:
        return list(request.vector)
    return check_vector((await _model(model).aembed([request.query or ""]))[0])
