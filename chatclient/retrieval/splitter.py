"""Cutting documents into chunks of at most ``chunk_size`` tokens, at the most natural place that
fits: a paragraph break, else a sentence end, else a space, else (one word longer than a chunk)
anywhere.

Tokens are counted by a :data:`~chatclient.memory.tokens.TokenCounter`: by default ``tiktoken``
when it is installed (``pip install "chatclient[tokens]"``, encoding ``o200k_base``), otherwise
an approximation of four characters per token. A chunk's size is the sum of its pieces' counts,
which is never below the count of the chunk as a whole for the approximation, and for ``tiktoken``
at most a token or so off at a join.

The chunks keep the text exactly: without overlap, joining a document's chunks gives its text back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigurationError
from ..memory.tokens import TokenCounter, default_token_counter
from .document import Document

__all__ = ["TokenTextSplitter"]

_PARAGRAPH = re.compile(r"(?<=\n\n)(?=\S)")
# A sentence ends at . ! ? ; : before whitespace, at a line break, or at the CJK full stop, exclamation
# and question marks (no space follows those).
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+(?=\S)|(?<=\n)(?=\S)|(?<=[\u3002\uff01\uff1f])(?=\S)")
_WORD = re.compile(r"(?<=\s)(?=\S)")


def _cut(text: str, boundary: re.Pattern[str]) -> list[str]:
    """``text`` in pieces that end where ``boundary`` matches, whitespace kept with the piece before."""
    pieces, start = [], 0
    for match in boundary.finditer(text):
        end = match.end()
        if end > start:
            pieces.append(text[start:end])
            start = end
    pieces.append(text[start:])
    return [p for p in pieces if p]


@dataclass(frozen=True)
class _Piece:
    text: str
    tokens: int


class TokenTextSplitter:
    """Splits documents into chunks of at most ``chunk_size`` tokens; consecutive chunks share up
    to ``chunk_overlap`` tokens of whole pieces. A chunk is a new document with id
    ``"{id}#{index}"`` and its document's metadata plus ``parent_id`` and ``chunk_index``.
    Chunks of only whitespace are dropped."""

    def __init__(self, chunk_size: int = 800, chunk_overlap: int = 0, *, counter: TokenCounter | None = None) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be a positive number of tokens, got {chunk_size!r}")
        if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int) or not 0 <= chunk_overlap < chunk_size:
            raise ConfigurationError(f"chunk_overlap must be from 0 to chunk_size - 1, got {chunk_overlap!r}")
        self.chunk_size, self.chunk_overlap = chunk_size, chunk_overlap
        self.counter: TokenCounter = counter if counter is not None else default_token_counter()

    def split(self, documents: Sequence[Document]) -> list[Document]:
        """Every document's chunks, in order."""
        chunks: list[Document] = []
        for document in documents:
            texts = [t for t in self.split_text(document.text) if t.strip()]
            for index, text in enumerate(texts):
                metadata = {**document.metadata, "parent_id": document.id, "chunk_index": index}
                chunks.append(Document(f"{document.id}#{index}", text, metadata, document.media))
        return chunks

    def split_text(self, text: str) -> list[str]:
        """``text`` as chunks of at most ``chunk_size`` tokens each."""
        pieces = self._pieces(text, (_PARAGRAPH, _SENTENCE, _WORD))
        chunks: list[str] = []
        current: list[_Piece] = []
        size = 0
        for piece in pieces:
            if current and size + piece.tokens > self.chunk_size:
                chunks.append("".join(p.text for p in current))
                current = self._overlap(current, piece.tokens)
                size = sum(p.tokens for p in current)
            current.append(piece)
            size += piece.tokens
        if current:
            chunks.append("".join(p.text for p in current))
        return chunks

    def _overlap(self, chunk: list[_Piece], incoming: int) -> list[_Piece]:
        """The last pieces of ``chunk`` worth at most ``chunk_overlap`` tokens that still leave room
        for the incoming piece."""
        kept: list[_Piece] = []
        budget = min(self.chunk_overlap, self.chunk_size - incoming)
        for piece in reversed(chunk):
            if piece.tokens > budget:
                break
            kept.insert(0, piece)
            budget -= piece.tokens
        return kept

    def _pieces(self, text: str, boundaries: tuple[re.Pattern[str], ...]) -> list[_Piece]:
        """``text`` in pieces that each fit a chunk, cut at the coarsest boundary that works."""
        tokens = self.counter(text)
        if tokens <= self.chunk_size:
            return [_Piece(text, tokens)] if text else []
        if not boundaries:
            return self._hard_cut(text)
        parts = _cut(text, boundaries[0])
        if len(parts) == 1:
            return self._pieces(text, boundaries[1:])
        found: list[_Piece] = []
        for part in parts:
            found += self._pieces(part, boundaries[1:] if self.counter(part) > self.chunk_size else boundaries)
        return found

    def _hard_cut(self, text: str) -> list[_Piece]:
        """A run without spaces longer than a chunk: the longest prefixes that fit, one after another."""
        pieces = []
        while text:
            low, high = 1, len(text)  # the longest prefix within chunk_size (at least one character)
            while low < high:
                middle = (low + high + 1) // 2
                if self.counter(text[:middle]) <= self.chunk_size:
                    low = middle
                else:
                    high = middle - 1
            pieces.append(_Piece(text[:low], self.counter(text[:low])))
            text = text[low:]
        return pieces
