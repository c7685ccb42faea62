"""What a vector store's search costs: ``python -m benchmarks.retrieval [--postgres URL]``.

For each size (10,000 and 100,000 documents by default) the SQLite store (sqlite-vec, exact scan) and,
given ``--postgres`` (a server with pgvector), the pgvector store (HNSW index) are filled with the
same unit vectors (``--dims``, 384 by default: a small sentence model's size; clustered, see
:data:`CLUSTERS`) and metadata,
then searched with the same query vectors, top 5, three ways, interleaved query by query so drift on
a shared machine hits them alike:

- ``store``: ``store.search(SearchRequest(vector=q, top_k=5))``, documents decoded;
- ``raw SQL``: the query a hand-written program would send for the same vector and columns, on the
  same driver (sqlite3/pysqlite3 with sqlite-vec loaded; psycopg), rows fetched, nothing decoded;
- the same two with a filter that keeps one document in ten (``Key("group") == "g3"``), the raw
  query filtering with the plainest JSON condition.

It prints p50/p99 in milliseconds and the ratio store/raw of the p50s, and for pgvector the recall
of its top 5 against the exact top 5 (SQLite's). ``--out FILE`` also writes the table there.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chatclient.retrieval import Document, Key, SearchRequest
from chatclient.retrieval._codec import float32_blob, vector_text

TOP_K = 5
BATCH = 1000


CLUSTERS = 200
NOISE = 0.6
"""Points scattered around 200 random directions: real embeddings cluster by topic; uniformly random
vectors in 384 dimensions are all nearly orthogonal, a case no index (nor a user) ever sees."""


def _unit(v: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in v))
    return [x / norm for x in v]


def unit_vectors(count: int, dims: int, rng: random.Random, centres: list[list[float]]) -> list[list[float]]:
    vectors = []
    for _ in range(count):
        centre = centres[rng.randrange(len(centres))]
        vectors.append(_unit([c + rng.gauss(0.0, NOISE / math.sqrt(dims)) for c in centre]))
    return vectors


def documents(count: int) -> list[Document]:
    return [Document(f"doc-{i}", f"passage {i}", {"group": f"g{i % 10}", "n": i}) for i in range(count)]


def fill(store: Any, docs: list[Document], vectors: list[list[float]]) -> float:
    started = time.perf_counter()
    for start in range(0, len(docs), BATCH):
        store.add(docs[start : start + BATCH], vectors[start : start + BATCH])
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def interleaved(ops: dict[str, Callable[[list[float]], Any]], queries: list[list[float]]) -> dict[str, list[float]]:
    """Milliseconds of each op per query, the ops taking turns (their order rotating) on each query."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    names = list(ops)
    for n, query in enumerate(queries):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            started = time.perf_counter_ns()
            ops[name](query)
            times[name].append((time.perf_counter_ns() - started) / 1e6)
    return times


def sqlite_ops(path: Path, table: str) -> tuple[Any, dict[str, Callable[[list[float]], Any]]]:
    from chatclient.retrieval.sqlite import MMAP_SIZE, SqliteVectorStore, sqlite_driver

    store = SqliteVectorStore(path, prefix=table)
    raw = sqlite_driver().connect(str(path))
    import sqlite_vec

    raw.enable_load_extension(True)
    sqlite_vec.load(raw)
    raw.execute(f"PRAGMA mmap_size = {MMAP_SIZE}").fetchall()  # the store's setting: only its own cost compared
    t = f"{table}vector_document"
    plain = (
        f"SELECT id, text, metadata, 1 - vec_distance_cosine(embedding, ?) AS score FROM {t} "
        f"ORDER BY score DESC LIMIT {TOP_K}"
    )
    filtered = (
        f"SELECT id, text, metadata, 1 - vec_distance_cosine(embedding, ?) AS score FROM {t} "
        f"WHERE json_extract(metadata, '$.group') = 'g3' ORDER BY score DESC LIMIT {TOP_K}"
    )
    ops = {
        "store": lambda q: store.search(SearchRequest(vector=q, top_k=TOP_K)),
        "raw SQL": lambda q: raw.execute(plain, (float32_blob(q),)).fetchall(),
        "store, filtered": lambda q: store.search(SearchRequest(vector=q, top_k=TOP_K, filter=Key("group") == "g3")),
        "raw SQL, filtered": lambda q: raw.execute(filtered, (float32_blob(q),)).fetchall(),
    }
    return store, ops


def postgres_ops(url: str, table: str, dims: int) -> tuple[Any, dict[str, Callable[[list[float]], Any]], Any]:
    import psycopg

    from chatclient.retrieval.postgres import PgVectorStore

    store = PgVectorStore(url, dimensions=dims, prefix=table)
    raw = psycopg.connect(url, autocommit=True)
    t = f"{table}vector_document"
    plain = (
        f"SELECT id, text, metadata, 1 - (embedding <=> %s::vector) FROM {t} "
        f"ORDER BY embedding <=> %s::vector LIMIT {TOP_K}"
    )
    filtered = (
        f"SELECT id, text, metadata, 1 - (embedding <=> %s::vector) FROM {t} "
        f"WHERE metadata->>'group' = 'g3' ORDER BY embedding <=> %s::vector LIMIT {TOP_K}"
    )

    def raw_filtered(q: list[float]) -> Any:
        text = vector_text(q)
        with raw.transaction():  # what the store does: iterative scans, so a filter still gets 5
            raw.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            return raw.execute(filtered, (text, text)).fetchall()

    ops = {
        "store": lambda q: store.search(SearchRequest(vector=q, top_k=TOP_K)),
        "raw SQL": lambda q: raw.execute(plain, (vector_text(q), vector_text(q))).fetchall(),
        "store, filtered": lambda q: store.search(SearchRequest(vector=q, top_k=TOP_K, filter=Key("group") == "g3")),
        "raw SQL, filtered": raw_filtered,
    }
    return store, ops, raw


def summarise(backend: str, size: int, times: dict[str, list[float]], extra: str = "") -> list[str]:
    rows = []
    for kind, raw_kind in (("store", "raw SQL"), ("store, filtered", "raw SQL, filtered")):
        s, r = times[kind], times[raw_kind]
        ratio = statistics.median(s) / statistics.median(r)
        rows.append(
            f"| {backend} | {size:,} | {kind} | {statistics.median(s):.2f} | {percentile(s, 0.99):.2f} "
            f"| {statistics.median(r):.2f} | {percentile(r, 0.99):.2f} | {ratio:.2f}x | {extra} |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--postgres", help="URL of a PostgreSQL with pgvector")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(20261206)
    header = [
        "| store | documents | search | p50 ms | p99 ms | raw SQL p50 ms | raw SQL p99 ms "
        "| store / raw (p50) | notes |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    lines = list(header)
    print("\n".join(header), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            centres = [_unit([rng.gauss(0.0, 1.0) for _ in range(args.dims)]) for _ in range(CLUSTERS)]
            docs, vectors = documents(size), unit_vectors(size, args.dims, rng, centres)
            queries = unit_vectors(args.queries, args.dims, rng, centres)
            exact: list[list[str]] | None = None
            if not args.no_sqlite:
                store, ops = sqlite_ops(Path(folder) / f"bench-{size}.db", f"b{size}_")
                loaded = fill(store, docs, vectors)
                interleaved(ops, queries[: min(10, len(queries))])  # warm-up: pages in cache
                times = interleaved(ops, queries)
                exact = [[d.id for d in store.search(SearchRequest(vector=q, top_k=TOP_K))] for q in queries]
                rows = summarise("SQLite (sqlite-vec, exact)", size, times, f"loaded in {loaded:.1f} s")
                print("\n".join(rows), flush=True)
                lines += rows
                store.close()
            if args.postgres:
                table = f"b{uuid.uuid4().hex[:8]}_"
                store, ops, raw = postgres_ops(args.postgres, table, args.dims)
                try:
                    loaded = fill(store, docs, vectors)
                    raw.execute(f"ANALYZE {table}vector_document")
                    interleaved(ops, queries[: min(10, len(queries))])
                    times = interleaved(ops, queries)
                    note = f"loaded (HNSW built as rows arrive) in {loaded:.1f} s"
                    if exact is not None:
                        found = [[d.id for d in store.search(SearchRequest(vector=q, top_k=TOP_K))] for q in queries]
                        hits = sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True))
                        note += f"; recall@{TOP_K} vs exact {hits / (TOP_K * len(queries)):.3f}"
                    rows = summarise("PostgreSQL (pgvector, HNSW)", size, times, note)
                    print("\n".join(rows), flush=True)
                    lines += rows
                finally:
                    raw.execute(f"DROP TABLE IF EXISTS {table}vector_document")
                    raw.close()
                    store.close()
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
