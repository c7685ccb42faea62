"""The retrieval advisors' overhead above the store's own query (issue 33, item 5).

``python -m benchmarks.retrieval_advisor [--docs N] [--rounds R]``: one call through a client with a
scripted model (no HTTP), with ``QuestionAnswerAdvisor`` or ``RetrievalAugmentationAdvisor`` (no
transformers: the advisor's own work), against the same call without an advisor and the store's own
``search`` of the same query. The three are timed in turn within each round, so a slow moment of a
shared machine falls on all three; the overhead of a round is ``advised - plain - search``.

Two stores: one that hands back the four documents the real store found for the query, at once
(so the advisor's own cost is not lost in the noise of a scan), and the in-memory store (an exact
scan in Python) holding ``--docs`` documents embedded by a hashing embedder (words hashed into 256
dimensions): the figures are the advisor's cost, not a model's.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import time
from collections.abc import Callable

from advisors.question_answer import QuestionAnswerAdvisor
from advisors.rag import RetrievalAugmentationAdvisor
from advisors.retriever import DEFAULT_RETRIEVAL_ORDER
from chatclient import BaseAdvisor, ChatClient
from chatclient.retrieval import Document, Embedding, EmbeddingModel, InMemoryVectorStore, SearchRequest
from chatclient.testing import ScriptedChatModel

DIMENSIONS = 256
WORDS = [
    *("owl", "bat", "bee", "fox", "hive", "nest", "night", "day", "honey", "insect", "hunt", "sleep"),
    *("fly", "swim", "river", "tree", "leaf", "stone", "rain", "snow", "wind", "sun", "moon", "star"),
]
QUERY = "Where do bats hunt insects at night by the river?"

Row = tuple[str, float, float, float, float]
"""Name, then µs: store search, call without the advisor, call with it, overhead (0 on p99 rows)."""


class HashingEmbedding(EmbeddingModel):
    dimensions = DIMENSIONS

    def embed_batch(self, texts: list[str]) -> list[Embedding]:
        vectors = []
        for text in texts:
            vector = [0.0] * DIMENSIONS
            for word in re.findall(r"[a-z]+", text.lower()):
                vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % DIMENSIONS] += 1
            vector[0] += 1e-3
            vectors.append(vector)
        return vectors


class NoOpAdvisor(BaseAdvisor):
    """At the retrieval advisors' order, doing nothing: what any advisor in the chain costs."""

    order = DEFAULT_RETRIEVAL_ORDER


class FoundStore:
    """A store that answers every search with the documents given (what a real store found)."""

    def __init__(self, found: list[Document]) -> None:
        self.found = found

    def search(self, request: SearchRequest | str) -> list[Document]:
        return list(self.found)


def _documents(count: int) -> list[Document]:
    return [
        Document(f"d{i}", " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 9)), {"n": i}) for i in range(count)
    ]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(op: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    op()
    return (time.perf_counter_ns() - start) / 1000.0


def _rows(name: str, store: FoundStore | InMemoryVectorStore, advisor: object, rounds: int) -> list[Row]:
    model = ScriptedChatModel(lambda prompt: "They hunt over water.")
    plain = ChatClient.create(model)
    advised = ChatClient.builder(model).default_advisors(advisor).build()  # type: ignore[arg-type]
    ops = (
        lambda: store.search(SearchRequest(query=QUERY)),
        lambda: plain.prompt(QUERY).call().content(),
        lambda: advised.prompt(QUERY).call().content(),
    )
    for op in ops:
        for _ in range(50):
            op()
    search, bare, full, overhead = [], [], [], []
    for _ in range(rounds):
        s, b, f = (_timed(op) for op in ops)
        search.append(s)
        bare.append(b)
        full.append(f)
        overhead.append(f - b - s)
    median = statistics.median
    return [
        (name, median(search), median(bare), median(full), median(overhead)),
        (f"{name} (p99)", _percentile(search, 0.99), _percentile(bare, 0.99), _percentile(full, 0.99), 0.0),
    ]


def measure(docs: int, rounds: int) -> list[Row]:
    scanned = InMemoryVectorStore(HashingEmbedding())
    scanned.add(_documents(docs))
    found = FoundStore(scanned.search(SearchRequest(query=QUERY)))
    rows: list[Row] = []
    for label, store in (("found at once", found), (f"in memory, {docs} docs", scanned)):
        advisors: list[tuple[str, object]] = [("a no-op advisor (the chain's share)", NoOpAdvisor())]
        advisors = advisors if store is found else []
        advisors += [
            ("QuestionAnswerAdvisor", QuestionAnswerAdvisor(store)),  # type: ignore[arg-type]
            ("RetrievalAugmentationAdvisor", RetrievalAugmentationAdvisor(store)),  # type: ignore[arg-type]
        ]
        for name, advisor in advisors:
            rows += _rows(f"{name}, {label}", store, advisor, rounds)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="The retrieval advisors' overhead above the store's own query.")
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    print(f"{args.rounds} rounds; µs per operation, p50 unless marked; in-memory store of {DIMENSIONS} dimensions")
    print(
        "| advisor, store | store search | call, no advisor | call with advisor | overhead: advised - plain - search |"
    )
    print("|---|--:|--:|--:|--:|")
    for name, search, bare, full, overhead in measure(args.docs, args.rounds):
        extra = "" if name.endswith("(p99)") else f"{overhead:.1f}"
        print(f"| {name} | {search:.1f} | {bare:.1f} | {full:.1f} | {extra} |")


if __name__ == "__main__":
    main()
