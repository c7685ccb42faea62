"""The contract every vector store keeps, as a pytest class to subclass for your own store, and a
scripted embedding model for tests.

``class TestMyStore(VectorStoreContract)`` with a ``store`` fixture that takes the
``embedding_model`` fixture and yields an empty :class:`~chatclient.retrieval.AsyncVectorStore`
built on it (wrap a sync store in :class:`~chatclient.retrieval.ThreadedVectorStore`: its calls then
run on real threads). The filter cases are checked against :func:`~chatclient.retrieval.matches`,
the reference semantics, and a few against hand-written answers so the reference is checked too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from ..messages import ImagePart
from ..retrieval.document import Document
from ..retrieval.embedding import Embedding, EmbeddingModel
from ..retrieval.errors import VectorStoreError
from ..retrieval.filters import Filter, Key, matches
from ..retrieval.store import AsyncVectorStore, SearchRequest

__all__ = ["FILTER_CASES", "FILTER_DOCUMENTS", "ScriptedEmbeddingModel", "VectorStoreContract"]


class ScriptedEmbeddingModel(EmbeddingModel):
    """Returns the vector given for each text (recorded embeddings, or hand-picked directions);
    an unknown text is an error, so a test never runs on a vector nobody chose. ``calls`` holds
    each batch it was asked for."""

    def __init__(self, vectors: Mapping[str, Sequence[float]], *, max_batch_size: int = 256) -> None:
        self.vectors = {text: [float(x) for x in vector] for text, vector in vectors.items()}
        self.max_batch_size = max_batch_size
        self.calls: list[list[str]] = []

    def embed_batch(self, texts: list[str]) -> list[Embedding]:
        self.calls.append(list(texts))
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            raise KeyError(f"ScriptedEmbeddingModel has no vector for {missing[0]!r}")
        return [list(self.vectors[t]) for t in texts]


def _angle(degrees: float) -> list[float]:
    """A unit vector in the plane at ``degrees``, lifted into 3-D so stores see a real dimension."""
    r = math.radians(degrees)
    return [math.cos(r), math.sin(r), 0.0]


FILTER_DOCUMENTS: list[tuple[Document, list[float]]] = [
    (Document("d1", "one", {"year": 2019, "genre": "drama", "rating": 4.5, "draft": False}), _angle(0)),
    (Document("d2", "two", {"year": 2020, "genre": "crime", "rating": 3.0, "draft": True}), _angle(10)),
    (Document("d3", "three", {"year": 2021, "genre": "drama", "rating": 5, "lang": "é"}), _angle(20)),
    (Document("d4", "four", {"year": "2022", "genre": "Drama", "draft": None}), _angle(30)),
    (Document("d5", "five", {"genre": "comedy", "rating": -1.25, "draft": False}), _angle(40)),
    (Document("d6", "six", {}), _angle(50)),
]
"""Mixed kinds on purpose: ``year`` is a string in d4, missing in d5 and d6; ``rating`` mixes int and
float; ``draft`` is a bool, ``None`` or missing."""

FILTER_CASES: list[tuple[Filter, set[str] | None]] = [
    (Key("genre") == "drama", {"d1", "d3"}),
    (Key("genre") != "drama", {"d2", "d4", "d5", "d6"}),
    (Key("year") < 2021, {"d1", "d2"}),
    (Key("year") <= 2021, {"d1", "d2", "d3"}),
    (Key("year") > 2019, {"d2", "d3"}),
    (Key("year") >= 2019, {"d1", "d2", "d3"}),
    (Key("year") == "2022", {"d4"}),
    (Key("year") == 2022, set()),
    (Key("rating") >= 4.5, {"d1", "d3"}),
    (Key("rating") < 0, {"d5"}),
    (Key("rating") == 5.0, {"d3"}),
    (Key("draft") == True, {"d2"}),  # noqa: E712  (a filter, not a truth test)
    (Key("draft") == False, {"d1", "d5"}),  # noqa: E712
    (Key("draft") != True, {"d1", "d3", "d4", "d5", "d6"}),  # noqa: E712
    (Key("genre").in_(["drama", "comedy"]), {"d1", "d3", "d5"}),
    (Key("genre").not_in(["drama", "comedy"]), {"d2", "d4", "d6"}),
    (Key("year").in_([2020, "2022"]), {"d2", "d4"}),
    (Key("genre") < "d", {"d2", "d5", "d4"}),  # code point order: "Drama" < "comedy" < "crime" < "d"
    (Key("lang") == "é", {"d3"}),
    ((Key("genre") == "drama") & (Key("year") > 2019), {"d3"}),
    ((Key("genre") == "crime") | (Key("rating") < 0), {"d2", "d5"}),
    (~(Key("genre") == "drama"), {"d2", "d4", "d5", "d6"}),
    (~((Key("year") >= 2020) & (Key("draft") == True)), {"d1", "d3", "d4", "d5", "d6"}),  # noqa: E712
    (~(Key("year") > 2000), {"d4", "d5", "d6"}),
    ((Key("missing") == 1) | ~(Key("missing") < 1), None),
    (~Key("genre").in_(["drama"]) & (Key("rating") > -5), None),
]
"""Each filter with the ids it selects from :data:`FILTER_DOCUMENTS`; ``None``: as ``matches`` says."""


def _ids(documents: Sequence[Document]) -> list[str]:
    return [d.id for d in documents]


class VectorStoreContract:
    """The checks every vector store passes. Provide a ``store`` fixture (see the module docstring)."""

    @pytest.fixture
    def embedding_model(self) -> ScriptedEmbeddingModel:
        texts = {"north": [0.0, 1.0, 0.0], "east": [1.0, 0.0, 0.0], "north-east": [1.0, 1.0, 0.0]}
        return ScriptedEmbeddingModel(texts, max_batch_size=2)

    async def _fill(self, store: AsyncVectorStore) -> None:
        await store.add([d for d, _ in FILTER_DOCUMENTS], [v for _, v in FILTER_DOCUMENTS])

    async def test_an_empty_store_finds_nothing(self, store: AsyncVectorStore) -> None:
        assert await store.search(SearchRequest(vector=[1.0, 0.0, 0.0])) == []

    async def test_search_returns_the_closest_first_with_cosine_scores(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        found = await store.search(SearchRequest(vector=_angle(12), top_k=3))
        assert _ids(found) == ["d2", "d3", "d1"]
        expected = [math.cos(math.radians(a)) for a in (2, 8, 12)]
        assert [d.score for d in found] == pytest.approx(expected, abs=1e-5)

    async def test_top_k_limits_the_results(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        assert _ids(await store.search(SearchRequest(vector=_angle(50), top_k=2))) == ["d6", "d5"]
        assert len(await store.search(SearchRequest(vector=_angle(50), top_k=100))) == len(FILTER_DOCUMENTS)

    async def test_the_vector_length_does_not_change_the_score(self, store: AsyncVectorStore) -> None:
        await store.add([Document("long", "x")], [[30.0, 40.0, 0.0]])
        found = await store.search(SearchRequest(vector=[0.6, 0.8, 0.0]))
        assert found[0].score == pytest.approx(1.0, abs=1e-5)

    async def test_the_score_threshold_drops_weaker_matches(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        cutoff = math.cos(math.radians(25))  # d1 (0°), d2 (10°), d3 (20°) are within 25° of 0°
        found = await store.search(SearchRequest(vector=_angle(0), top_k=10, score_threshold=cutoff))
        assert _ids(found) == ["d1", "d2", "d3"]
        assert all(d.score is not None and d.score >= cutoff for d in found)

    async def test_opposite_vectors_have_negative_scores(self, store: AsyncVectorStore) -> None:
        await store.add([Document("west", "w"), Document("east", "e")], [[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        found = await store.search(SearchRequest(vector=[1.0, 0.0, 0.0], top_k=5))
        assert [(d.id, round(d.score or 0, 5)) for d in found] == [("east", 1.0), ("west", -1.0)]
        positive = await store.search(SearchRequest(vector=[1.0, 0.0, 0.0], score_threshold=0.0))
        assert _ids(positive) == ["east"]

    async def test_equal_scores_are_ordered_by_id(self, store: AsyncVectorStore) -> None:
        docs = [Document(i, i) for i in ("c", "a", "b")]
        await store.add(docs, [[0.0, 0.0, 2.0]] * 3)
        assert _ids(await store.search(SearchRequest(vector=[0.0, 0.0, 1.0]))) == ["a", "b", "c"]

    async def test_documents_come_back_as_they_were_added(self, store: AsyncVectorStore) -> None:
        image = ImagePart(data="aGVsbG8=", media_type="image/png")
        meta = {"n": 3, "x": 2.5, "big": 2**53 + 1, "yes": True, "no": False, "none": None, "s": '日本 "q" \''}
        original = Document("doc/1 'quoted'", "text with ümlauts\nand lines", meta, image)
        await store.add([original], [[0.0, 1.0, 0.0]])
        (found,) = await store.search(SearchRequest(vector=[0.0, 1.0, 0.0]))
        assert found.id == original.id and found.text == original.text and found.media == image
        assert dict(found.metadata) == meta
        assert {k: type(v) for k, v in found.metadata.items()} == {k: type(v) for k, v in meta.items()}

    async def test_adding_an_id_again_replaces_the_document(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        await store.add([Document("d1", "one, revised", {"genre": "western"})], [_angle(45)])
        found = await store.search(SearchRequest(vector=_angle(45), top_k=10))
        assert len(found) == len(FILTER_DOCUMENTS)
        assert (found[0].id, found[0].text, dict(found[0].metadata)) == ("d1", "one, revised", {"genre": "western"})
        assert _ids(await store.search(SearchRequest(vector=_angle(0), top_k=10, filter=Key("genre") == "drama"))) == [
            "d3"
        ]

    async def test_delete_removes_those_ids_and_counts_them(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        assert await store.delete(["d1", "d3", "unknown"]) == 2
        assert await store.delete(["d1"]) == 0
        remaining = await store.search(SearchRequest(vector=_angle(0), top_k=10))
        assert sorted(_ids(remaining)) == ["d2", "d4", "d5", "d6"]

    async def test_delete_where_removes_what_the_filter_selects(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        assert await store.delete_where(Key("genre").in_(["drama", "comedy"])) == 3
        remaining = await store.search(SearchRequest(vector=_angle(0), top_k=10))
        assert sorted(_ids(remaining)) == ["d2", "d4", "d6"]

    @pytest.mark.parametrize(("expression", "expected"), FILTER_CASES, ids=[repr(f) for f, _ in FILTER_CASES])
    async def test_the_filter_selects_what_the_reference_semantics_select(
        self, store: AsyncVectorStore, expression: Filter, expected: set[str] | None
    ) -> None:
        reference = {d.id for d, _ in FILTER_DOCUMENTS if matches(expression, d.metadata)}
        if expected is not None:
            assert reference == expected  # the reference itself, against the hand-written answer
        await self._fill(store)
        found = await store.search(SearchRequest(vector=_angle(25), top_k=10, filter=expression))
        assert set(_ids(found)) == reference

    async def test_filter_threshold_and_top_k_combine(self, store: AsyncVectorStore) -> None:
        await self._fill(store)
        request = SearchRequest(vector=_angle(0), top_k=1, score_threshold=0.5, filter=Key("genre") != "drama")
        assert _ids(await store.search(request)) == ["d2"]

    async def test_texts_are_embedded_by_the_store_model_in_batches(
        self, store: AsyncVectorStore, embedding_model: ScriptedEmbeddingModel
    ) -> None:
        await store.add([Document("n", "north"), Document("e", "east"), Document("ne", "north-east")])
        assert embedding_model.calls == [["north", "east"], ["north-east"]]
        found = await store.search("north")
        assert _ids(found)[:2] == ["n", "ne"]
        assert found[1].score == pytest.approx(math.sqrt(0.5), abs=1e-5)

    async def test_a_vector_of_another_dimension_is_refused_and_nothing_is_stored(
        self, store: AsyncVectorStore
    ) -> None:
        await store.add([Document("a", "a")], [[1.0, 0.0, 0.0]])
        with pytest.raises(VectorStoreError):
            await store.add([Document("b", "b"), Document("c", "c")], [[1.0, 0.0, 0.0], [1.0, 0.0]])
        assert _ids(await store.search(SearchRequest(vector=[1.0, 0.0, 0.0], top_k=10))) == ["a"]
        with pytest.raises(VectorStoreError):
            await store.search(SearchRequest(vector=[1.0, 0.0]))

    async def test_concurrent_writers_all_land(self, store: AsyncVectorStore) -> None:
        """Eight writers at once (real threads for a sync store behind ThreadedVectorStore), each
        adding its own documents and replacing a shared one: every document is there once."""
        import asyncio

        async def writer(n: int) -> None:
            docs = [Document(f"w{n}-{i}", f"text {n} {i}") for i in range(5)] + [Document("shared", f"by {n}")]
            await store.add(docs, [_angle(n * 5 + i) for i in range(5)] + [_angle(90)])

        await asyncio.gather(*(writer(n) for n in range(8)))
        found = await store.search(SearchRequest(vector=_angle(0), top_k=100))
        assert sorted(_ids(found)) == sorted([f"w{n}-{i}" for n in range(8) for i in range(5)] + ["shared"])

    async def test_bad_input_is_refused_before_anything_is_stored(self, store: AsyncVectorStore) -> None:
        from ..errors import ConfigurationError

        with pytest.raises(ConfigurationError):
            await store.add([Document("a", "a"), Document("a", "b")], [[1.0, 0, 0], [0, 1.0, 0]])
        with pytest.raises(ConfigurationError):
            await store.add([Document("a", "a")], [[0.0, 0.0, 0.0]])
        with pytest.raises(ConfigurationError):
            await store.add([Document("a", "a")], [])
        assert await store.search(SearchRequest(vector=[1.0, 0.0, 0.0])) == []
