"""The in-memory store runs the vector store contract through both faces."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from chatclient.retrieval import AsyncInMemoryVectorStore, AsyncVectorStore, InMemoryVectorStore, ThreadedVectorStore
from chatclient.testing.retrieval import ScriptedEmbeddingModel, VectorStoreContract


class TestInMemoryStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, embedding_model: ScriptedEmbeddingModel) -> AsyncIterator[AsyncVectorStore]:
        yield ThreadedVectorStore(InMemoryVectorStore(embedding_model))


class TestAsyncInMemoryStore(VectorStoreContract):
    @pytest.fixture
    async def store(self, embedding_model: ScriptedEmbeddingModel) -> AsyncIterator[AsyncVectorStore]:
        yield AsyncInMemoryVectorStore(embedding_model)
