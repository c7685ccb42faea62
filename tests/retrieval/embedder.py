"""A deterministic embedding model for tests: each word hashed into one of 64 dimensions."""

from __future__ import annotations

import hashlib
import re

from chatclient.retrieval import Embedding, EmbeddingModel

DIMENSIONS = 64


def words_vector(text: str) -> Embedding:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    if not any(vector):
        vector[0] = 1e-6  # a text with no word still has a direction
    return vector


class WordsEmbedding(EmbeddingModel):
    """Shared words make texts close; ``queries`` records every text embedded after ``reset()``."""

    dimensions = DIMENSIONS

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_batch(self, texts: list[str]) -> list[Embedding]:
        self.texts += texts
        return [words_vector(t) for t in texts]
