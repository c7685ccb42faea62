"""The in-memory vector store: exact search over every document, for tests, examples and a few
thousand documents. Nothing is kept after the process ends.

The sync and async faces share one index; the async face embeds with ``aembed`` and searches in
the loop's thread (a scan of a small index is quicker than a hop to a worker thread).
"""

from __future__ import annotations

import heapq
import math
import threading
from collections.abc import Sequence

from .document import Document
from .embedding import EmbeddingModel
from .filters import Filter, matches
from .store import SearchRequest, aquery_vector, avectors_for, check_vector, query_vector, vectors_for

__all__ = ["AsyncInMemoryVectorStore", "InMemoryVectorStore"]


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector]


class _Index:
    """Documents by id with their unit vectors; one lock, so concurrent writers never interleave."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[Document, list[float]]] = {}
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    def put(self, documents: Sequence[Document], vectors: list[list[float]]) -> None:
        with self._lock:
            dimensions = self._dimensions if self._dimensions is not None else (len(vectors[0]) if vectors else None)
            units = [_unit(check_vector(v, dimensions)) for v in vectors]  # all checked before any is stored
            for document, unit in zip(documents, units, strict=True):
                self._items[document.id] = (document, unit)
            self._dimensions = dimensions

    def delete(self, ids: Sequence[str]) -> int:
        if isinstance(ids, str):
            ids = [ids]
        with self._lock:
            return sum(self._items.pop(i, None) is not None for i in set(ids))

    def delete_where(self, expression: Filter) -> int:
        with self._lock:
            doomed = [i for i, (d, _) in self._items.items() if matches(expression, d.metadata)]
            for i in doomed:
                del self._items[i]
            return len(doomed)

    def search(self, request: SearchRequest, vector: list[float]) -> list[Document]:
        with self._lock:
            items = list(self._items.values())
            dimensions = self._dimensions
        if not items:
            return []
        query = _unit(check_vector(vector, dimensions))
        expression, threshold = request.filter, request.score_threshold
        scored = []
        for document, unit in items:
            if expression is not None and not matches(expression, document.metadata):
                continue
            score = math.fsum(map(float.__mul__, query, unit))
            if threshold is None or score >= threshold:
                scored.append((score, document))
        best = heapq.nsmallest(request.top_k, scored, key=lambda pair: (-pair[0], pair[1].id))
        return [document.with_score(score) for score, document in best]


class InMemoryVectorStore:
    """A :class:`~chatclient.retrieval.VectorStore` in a dict; ``embedding_model`` embeds added
    texts and query texts (``None`` when every call passes vectors)."""

    def __init__(self, embedding_model: EmbeddingModel | None = None) -> None:
        self.embedding_model = embedding_model
        self._index = _Index()

    def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        self._index.put(documents, vectors_for(documents, embeddings, self.embedding_model))

    def delete(self, ids: Sequence[str]) -> int:
        return self._index.delete(ids)

    def delete_where(self, filter: Filter) -> int:
        return self._index.delete_where(filter)

    def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        return self._index.search(request, query_vector(request, self.embedding_model))


class AsyncInMemoryVectorStore:
    """:class:`InMemoryVectorStore` for an event loop."""

    def __init__(self, embedding_model: EmbeddingModel | None = None) -> None:
        self.embedding_model = embedding_model
        self._index = _Index()

    async def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        self._index.put(documents, await avectors_for(documents, embeddings, self.embedding_model))

    async def delete(self, ids: Sequence[str]) -> int:
        return self._index.delete(ids)

    async def delete_where(self, filter: Filter) -> int:
        return self._index.delete_where(filter)

    async def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        return self._index.search(request, await aquery_vector(request, self.embedding_model))
