"""The embedding model SPI: text in, vectors out, in batches the provider accepts, order kept.

A provider implements ``embed_batch`` (one request, at most ``max_batch_size`` texts) and, for
native async, ``aembed_batch``; ``embed``/``aembed`` split any number of texts into such batches,
call them in order and check what came back, so a provider cannot silently return vectors for the
wrong texts.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..errors import ConfigurationError
from .errors import EmbeddingError

__all__ = ["Embedding", "EmbeddingModel", "batches"]

Embedding = list[float]


def batches(texts: Sequence[str], size: int) -> list[list[str]]:
    """``texts`` in consecutive runs of at most ``size``."""
    if size < 1:
        raise ConfigurationError(f"max_batch_size must be at least 1, got {size}")
    return [list(texts[i : i + size]) for i in range(0, len(texts), size)]


def _checked(texts: Sequence[str]) -> Sequence[str]:
    if isinstance(texts, str):
        raise ConfigurationError("embed() takes a list of texts; for one text, pass [text]")
    for text in texts:
        if not isinstance(text, str):
            raise ConfigurationError(f"embed() takes strings, got {type(text).__name__}")
    return texts


class EmbeddingModel(ABC):
    """Implement ``embed_batch``; override ``aembed_batch`` for native async (the default runs
    ``embed_batch`` in a worker thread)."""

    max_batch_size: int = 256
    """Most texts sent in one request; ``embed`` splits longer lists."""

    dimensions: int | None = None
    """The length of every vector, when known before the first call."""

    @abstractmethod
    def embed_batch(self, texts: list[str]) -> list[Embedding]:
        """One vector per text, in order, from one request of at most ``max_batch_size`` texts."""

    async def aembed_batch(self, texts: list[str]) -> list[Embedding]:
        import asyncio

        return await asyncio.to_thread(self.embed_batch, texts)

    def embed(self, texts: Sequence[str]) -> list[Embedding]:
        """One vector per text, in the order given."""
        vectors: list[Embedding] = []
        for batch in batches(_checked(texts), self.max_batch_size):
            vectors += self._check(batch, self.embed_batch(batch))
        return vectors

    async def aembed(self, texts: Sequence[str]) -> list[Embedding]:
        vectors: list[Embedding] = []
        for batch in batches(_checked(texts), self.max_batch_size):
            vectors += self._check(batch, await self.aembed_batch(batch))
        return vectors

    def _check(self, batch: list[str], vectors: list[Embedding]) -> list[Embedding]:
        name = type(self).__name__
        if len(vectors) != len(batch):
            raise EmbeddingError(f"{name} returned {len(vectors)} vectors for {len(batch)} texts")
        for vector in vectors:
            if not vector or not all(math.isfinite(x) for x in vector):
                raise EmbeddingError(f"{name} returned an empty or non-finite vector")
            if self.dimensions is not None and len(vector) != self.dimensions:
                raise EmbeddingError(
                    f"{name} returned a vector of {len(vector)} dimensions, expected {self.dimensions}"
                )
        return vectors
