"""Indexes that tool search ranks a catalogue with: BM25 (the default), regex, or embeddings.

An index is built once per catalogue (a tuple of :class:`ToolDefinition`) and answers
``search(query, k)`` with ``(name, score)`` pairs, best first. Only the standard library is used:
a catalogue holds hundreds of short documents, where a plain BM25 is a few microseconds a tool.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Protocol

from chatclient.tools.definition import ToolDefinition

__all__ = ["Bm25Index", "EmbeddingIndex", "IndexFactory", "RegexIndex", "ToolIndex", "tokenize"]


class ToolIndex(Protocol):
    """Ranks the tools of one catalogue for a query."""

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """At most ``k`` ``(tool name, score)`` pairs with a positive score, best first."""
        ...


IndexFactory = Callable[[Sequence[ToolDefinition]], ToolIndex]
"""Builds an index over a catalogue; ``Bm25Index``, ``RegexIndex`` and ``EmbeddingIndex.factory(fn)`` are ones."""

_STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "for",
        "from",
        "get",
        "gets",
        "give",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "show",
        "tell",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "use",
        "using",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    }
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _fold(word: str) -> str:
    """A light plural fold, so "shops" finds "shop" and "categories" finds "category"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=8192)
def _terms(raw: str) -> tuple[str, ...]:
    """One raw word's terms; cached, since a catalogue repeats its words many times over."""
    words = (w.lower() for w in _CAMEL.split(raw) if w)
    return tuple(_fold(w) for w in words if w not in _STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Words of ``text``: camelCase and snake_case split, lower-cased, stop words dropped, plurals folded."""
    return [term for raw in _WORD.findall(text.replace("_", " ")) for term in _terms(raw)]


def _parameter_names(definition: ToolDefinition) -> str:
    properties = definition.input_schema.get("properties")
    return " ".join(properties) if isinstance(properties, dict) else ""


class Bm25Index:
    """BM25 (Lucene's variant: k1 = 1.2, b = 0.75) over each tool's name, description and
    parameter names; name words count ``name_boost`` times, since a name says most about a tool.

    A hit's score is then multiplied by ``1 + name_coverage_weight * (share of the tool's name words
    the query holds)``: "weather" names all of ``weather`` but a quarter of ``fleet_route_weather_alert``,
    so the near miss falls under the cut that tool search applies.
    """

    def __init__(
        self,
        definitions: Sequence[ToolDefinition],
        *,
        name_boost: int = 2,
        name_coverage_weight: float = 2.0,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self._names = [d.name for d in definitions]
        self._k1, self._b = k1, b
        self._coverage_weight = name_coverage_weight
        self._name_words = [frozenset(tokenize(d.name)) for d in definitions]
        docs = [
            tokenize(d.name) * name_boost + tokenize(d.description) + tokenize(_parameter_names(d)) for d in definitions
        ]
        self._terms = [Counter(doc) for doc in docs]
        self._lengths = [len(doc) for doc in docs]
        self._average = (sum(self._lengths) / len(docs)) if docs else 1.0
        frequency: Counter[str] = Counter(term for doc in self._terms for term in doc)
        total = len(docs)
        self._idf = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}
        self._postings: dict[str, list[int]] = {}
        for index, terms in enumerate(self._terms):
            for term in terms:
                self._postings.setdefault(term, []).append(index)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        scores: dict[int, float] = {}
        k1, b, average = self._k1, self._b, self._average or 1.0
        words = set(tokenize(query))
        for term in words:
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index in self._postings[term]:
                tf = self._terms[index][term]
                norm = k1 * (1 - b + b * self._lengths[index] / average)
                scores[index] = scores.get(index, 0.0) + idf * tf * (k1 + 1) / (tf + norm)
        if self._coverage_weight:
            for index, score in scores.items():
                name = self._name_words[index]
                if name:
                    scores[index] = score * (1 + self._coverage_weight * len(name & words) / len(name))
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [(self._names[i], score) for i, score in best]


class RegexIndex:
    """Counts case-insensitive matches of the query's words (each a regex) in names (weighted
    ``name_weight``) and descriptions: Spring AI's default style, no ranking statistics."""

    def __init__(self, definitions: Sequence[ToolDefinition], *, name_weight: float = 3.0):
        self._docs = [(d.name, d.name, d.description) for d in definitions]
        self._name_weight = name_weight

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        patterns = []
        for word in tokenize(query) or query.split():
            try:
                patterns.append(re.compile(word, re.IGNORECASE))
            except re.error:
                patterns.append(re.compile(re.escape(word), re.IGNORECASE))
        scored = []
        for position, (name, title, description) in enumerate(self._docs):
            score = sum(self._name_weight * len(p.findall(title)) + len(p.findall(description)) for p in patterns)
            if score > 0:
                scored.append((-score, position, name))
        scored.sort()
        return [(name, -negative) for negative, _, name in scored[:k]]


Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


class EmbeddingIndex:
    """Cosine similarity between the query's embedding and each tool's ("name: description"),
    through the user's ``embed(texts) -> vectors``; the catalogue is embedded once, when built."""

    def __init__(self, definitions: Sequence[ToolDefinition], embed: Embed):
        self._embed = embed
        self._names = [d.name for d in definitions]
        vectors = embed([f"{' '.join(tokenize(d.name))}: {d.description}" for d in definitions])
        if len(vectors) != len(self._names):
            raise ValueError(f"embed() returned {len(vectors)} vectors for {len(self._names)} tools")
        self._vectors = [_unit(v) for v in vectors]

    @staticmethod
    def factory(embed: Embed) -> IndexFactory:
        """An :data:`IndexFactory` for ``ToolSearchToolCallingAdvisor.builder().index(...)``."""
        return lambda definitions: EmbeddingIndex(definitions, embed)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        (vector,) = self._embed([query])
        q = _unit(vector)
        scored = sorted(
            ((sum(a * b for a, b in zip(q, v, strict=False)), -i) for i, v in enumerate(self._vectors)), reverse=True
        )
        return [(self._names[-i], score) for score, i in scored[:k] if score > 0]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
