"""A sync vector store behind the async protocol, each blocking call in a worker thread.

asyncio is imported by the first async call, not by this module: a sync script that imports a store
never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from .document import Document
from .embedding import EmbeddingModel
from .filters import Filter
from .store import SearchRequest, VectorStore, aquery_vector, avectors_for

__all__ = ["ThreadedVectorStore"]

T = TypeVar("T")


async def _in_thread(call: Callable[[], T]) -> T:
    from .._storage.threads import in_thread

    return await in_thread(call)


class ThreadedVectorStore:
    """A sync store seen through the async protocol, each call in a worker thread (so a blocking
    store never blocks the event loop). When the store has an ``embedding_model``, texts are
    embedded here with its ``aembed`` (native async where the model has it), and the store is
    handed the vectors."""

    def __init__(self, sync: VectorStore) -> None:
        self.sync = sync

    @property
    def embedding_model(self) -> EmbeddingModel | None:
        return getattr(self.sync, "embedding_model", None)

    async def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        model = self.embedding_model
        if embeddings is None and model is not None:
            embeddings = await avectors_for(documents, None, model)
        await _in_thread(lambda: self.sync.add(documents, embeddings))

    async def delete(self, ids: Sequence[str]) -> int:
        return await _in_thread(lambda: self.sync.delete(ids))

    async def delete_where(self, filter: Filter) -> int:
        return await _in_thread(lambda: self.sync.delete_where(filter))

    async def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        model = self.embedding_model
        if request.vector is None and model is not None:
            request = replace(request, query=None, vector=await aquery_vector(request, model))
        return await _in_thread(lambda: self.sync.search(request))
