"""The token splitter: chunks fit, text is kept, cuts fall at natural boundaries, overlap is shared."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatclient.errors import ConfigurationError
from chatclient.memory.tokens import estimate_tokens
from chatclient.retrieval import Document, TokenTextSplitter


def words(text: str) -> int:
    """A counter that is easy to reason about: one token per word."""
    return len(text.split())


TEXT = st.text(alphabet=st.sampled_from(list("abc é.!?\n\n  ")), max_size=400)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, size=st.integers(1, 30))
def test_chunks_fit_and_join_back_to_the_text(text: str, size: int) -> None:
    splitter = TokenTextSplitter(size, counter=estimate_tokens)
    chunks = splitter.split_text(text)
    assert "".join(chunks) == text
    assert all(estimate_tokens(c) <= size for c in chunks)
    assert all(chunks)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, size=st.integers(2, 30), data=st.data())
def test_with_overlap_each_chunk_starts_inside_the_one_before(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = TokenTextSplitter(size, overlap, counter=estimate_tokens).split_text(text)
    assert all(estimate_tokens(c) <= size for c in chunks)
    position = 0
    for chunk in chunks:  # each chunk is the text at some place at or after where the last one began
        found = text.find(chunk, position)
        assert found >= position
        position = found
    if chunks:
        assert text.endswith(chunks[-1]) and text.startswith(chunks[0])


def test_cuts_prefer_paragraphs_then_sentences_then_words() -> None:
    text = "One two three. Four five six.\n\nSeven eight nine ten eleven twelve thirteen fourteen."
    assert TokenTextSplitter(6, counter=words).split_text(text) == [
        "One two three. Four five six.\n\n",
        "Seven eight nine ten eleven twelve ",
        "thirteen fourteen.",
    ]
    assert TokenTextSplitter(3, counter=words).split_text("One two three. Four five six.") == [
        "One two three. ",
        "Four five six.",
    ]


def test_overlap_repeats_the_last_pieces() -> None:
    text = "A b. C d. E f. G h."
    chunks = TokenTextSplitter(4, 2, counter=words).split_text(text)
    assert chunks == ["A b. C d. ", "C d. E f. ", "E f. G h."]


def test_a_word_longer_than_a_chunk_is_cut_anywhere() -> None:
    chunks = TokenTextSplitter(2, counter=estimate_tokens).split_text("x" * 20)
    assert chunks == ["x" * 8, "x" * 8, "x" * 4]


def test_documents_become_chunks_with_their_parent() -> None:
    doc = Document("guide", "One two. Three four.   ", {"lang": "en"})
    chunks = TokenTextSplitter(2, counter=words).split([doc])
    assert [(c.id, c.text, dict(c.metadata)) for c in chunks] == [
        ("guide#0", "One two. ", {"lang": "en", "parent_id": "guide", "chunk_index": 0}),
        ("guide#1", "Three four.   ", {"lang": "en", "parent_id": "guide", "chunk_index": 1}),
    ]


def test_the_default_counter_works_without_tiktoken() -> None:
    splitter = TokenTextSplitter(10)
    assert splitter.split_text("word " * 30) and splitter.counter("abcd" * 10) > 0


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-1, 0), (10, 10), (10, -1), (True, 0), (10, 2.5)])
def test_bad_sizes_are_refused(size: object, overlap: object) -> None:
    with pytest.raises(ConfigurationError):
        TokenTextSplitter(size, overlap)  # type: ignore[arg-type]


def test_cjk_sentences_end_without_a_space() -> None:
    text = "\u4eca\u65e5\u306f\u6674\u308c\u3002\u660e\u65e5\u306f\u96e8\u3002"  # two sentences, no spaces
    assert TokenTextSplitter(1, counter=lambda t: t.count("\u3002")).split_text(text) == [
        "\u4eca\u65e5\u306f\u6674\u308c\u3002",
        "\u660e\u65e5\u306f\u96e8\u3002",
    ]
