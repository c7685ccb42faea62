"""Text and Markdown readers, and the adapter SPI for other formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatclient.errors import ConfigurationError
from chatclient.retrieval import (
    Document,
    DocumentReader,
    MarkdownReader,
    TextReader,
    read_documents,
    register_reader,
)

GUIDE = """Preface.

# Guide

Intro.

## Install

```bash
# a comment, not a heading
pip install x
```

### Linux ###

Use apt.

## Use
#hashtag is not a heading
#### Deep heading stays in its section
"""


def test_markdown_sections_carry_their_headings() -> None:
    docs = MarkdownReader(text=GUIDE, source="guide.md").read()
    assert [(d.id, dict(d.metadata)) for d in docs] == [
        ("guide.md#0", {"source": "guide.md"}),
        ("guide.md#1", {"source": "guide.md", "h1": "Guide", "title": "Guide"}),
        ("guide.md#2", {"source": "guide.md", "h1": "Guide", "h2": "Install", "title": "Install"}),
        ("guide.md#3", {"source": "guide.md", "h1": "Guide", "h2": "Install", "h3": "Linux", "title": "Linux"}),
        ("guide.md#4", {"source": "guide.md", "h1": "Guide", "h2": "Use", "title": "Use"}),
    ]
    assert "".join(d.text for d in docs) == GUIDE
    assert "# a comment, not a heading" in docs[2].text
    assert docs[4].text.endswith("#### Deep heading stays in its section\n")


def test_markdown_max_level_keeps_deeper_headings_inside() -> None:
    docs = MarkdownReader(text=GUIDE, source="g", max_level=1).read()
    assert [d.metadata.get("title") for d in docs] == [None, "Guide"]


def test_files_are_read_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("plain words", encoding="utf-8")
    (tmp_path / "guide.md").write_text(GUIDE, encoding="utf-8")
    (text,) = read_documents(tmp_path / "notes.txt")
    assert (text.text, text.metadata["source"]) == ("plain words", str(tmp_path / "notes.txt"))
    assert len(read_documents(tmp_path / "guide.md")) == 5
    assert TextReader(tmp_path / "notes.txt").read() == [text]


def test_an_adapter_is_registered_for_another_format(tmp_path: Path) -> None:
    class CsvReader:
        def __init__(self, path: Path) -> None:
            self.path = path

        def read(self) -> list[Document]:
            rows = self.path.read_text().splitlines()
            return [Document(f"{self.path.name}:{i}", row, {"row": i}) for i, row in enumerate(rows)]

    (tmp_path / "rows.csv").write_text("a,1\nb,2\n")
    with pytest.raises(ConfigurationError, match="register_reader"):
        read_documents(tmp_path / "rows.csv")
    register_reader(".csv", CsvReader)
    assert isinstance(CsvReader(tmp_path / "rows.csv"), DocumentReader)
    assert [d.text for d in read_documents(tmp_path / "rows.csv")] == ["a,1", "b,2"]


def test_unreadable_input_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="No such file"):
        read_documents(tmp_path / "missing.md")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ConfigurationError, match="not utf-8 text"):
        read_documents(tmp_path / "latin.txt")
    assert TextReader(tmp_path / "latin.txt", encoding="latin-1").read()[0].text == "café"
    with pytest.raises(ConfigurationError):
        MarkdownReader()
    with pytest.raises(ConfigurationError):
        register_reader("pdf", TextReader)
