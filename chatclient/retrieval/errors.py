"""Errors of the retrieval feature: one base, so an application can catch every retrieval failure."""

from __future__ import annotations

from ..errors import ChatClientError

__all__ = ["EmbeddingError", "RetrievalError", "VectorStoreError"]


class RetrievalError(ChatClientError):
    """Base of every retrieval error (embedding models, vector stores)."""


class EmbeddingError(RetrievalError):
    """An embedding model returned no usable vectors: a wrong count, an empty or non-finite vector."""


class VectorStoreError(RetrievalError):
    """A vector store could not do what was asked (unreachable server, a missing extension, a
    vector whose dimension differs from the store's)."""
