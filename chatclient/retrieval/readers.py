"""Turning files into documents: plain text and Markdown here; other formats (PDF, HTML, Office)
through the :class:`DocumentReader` SPI, registered by file suffix for :func:`read_documents`.

Markdown is cut at its headings (up to ``max_level``), one document per section, with the headings
above the section as metadata (``h1``, ``h2``, ... and ``title``, the nearest one), so a retrieved
passage can say where it came from. Lines in fenced code blocks are never taken for headings.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError
from .document import Document

__all__ = [
    "DocumentReader",
    "MarkdownReader",
    "TextReader",
    "read_documents",
    "register_reader",
]


@runtime_checkable
class DocumentReader(Protocol):
    """Reads one source into documents (a PDF adapter would give one per page)."""

    def read(self) -> list[Document]: ...


ReaderFactory = Callable[[Path], DocumentReader]
"""Makes the reader of one file."""


def _read_text(path: Path, encoding: str) -> str:
    try:
        return path.read_text(encoding=encoding)
    except FileNotFoundError as exc:
        raise ConfigurationError(f"No such file: {path}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not {encoding} text ({exc.reason} at byte {exc.start})") from exc


class TextReader:
    """A text file as one document: id and ``source`` metadata are the path as given."""

    def __init__(self, path: str | Path, *, encoding: str = "utf-8") -> None:
        self.path, self.encoding = Path(path), encoding

    def read(self) -> list[Document]:
        text = _read_text(self.path, self.encoding)
        return [Document(str(self.path), text, {"source": str(self.path)})]


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


class MarkdownReader:
    """A Markdown file (or ``text=``) as one document per section under a heading of level
    ``max_level`` or above; text before the first heading is a section of its own. Ids are
    ``"{source}#{index}"``; metadata: ``source``, ``title`` (the section's heading, absent before
    the first one), and ``h1``..``h{max_level}``: the headings the section is under."""

    def __init__(
        self, path: str | Path | None = None, *, text: str | None = None, source: str | None = None,
        max_level: int = 3, encoding: str = "utf-8",
    ) -> None:  # fmt: skip
        if (path is None) == (text is None):
            raise ConfigurationError("MarkdownReader reads a path or text=, one of them")
        if not 1 <= max_level <= 6:
            raise ConfigurationError(f"max_level is a heading level from 1 to 6, got {max_level}")
        self.path = Path(path) if path is not None else None
        self.text, self.max_level, self.encoding = text, max_level, encoding
        self.source = source if source is not None else (str(path) if path is not None else "markdown")

    def read(self) -> list[Document]:
        text = self.text if self.text is not None else _read_text(self.path, self.encoding)  # type: ignore[arg-type]
        documents: list[Document] = []
        headings: dict[int, str] = {}
        lines: list[str] = []
        fence: str | None = None

        def flush() -> None:
            body = "".join(lines)
            if body.strip():
                metadata: dict[str, str] = {"source": self.source}
                metadata |= {f"h{level}": title for level, title in sorted(headings.items())}
                if headings:
                    metadata["title"] = headings[max(headings)]
                documents.append(Document(f"{self.source}#{len(documents)}", body, metadata))
            lines.clear()

        for line in text.splitlines(keepends=True):
            opened = _FENCE.match(line)
            if fence is not None:
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                    fence = None
            elif opened:
                fence = opened.group(1)
            else:
                heading = _HEADING.match(line.rstrip("\n"))
                if heading and len(heading.group(1)) <= self.max_level:
                    flush()
                    level = len(heading.group(1))
                    headings = {k: v for k, v in headings.items() if k < level}
                    headings[level] = (heading.group(2) or "").strip()
            lines.append(line)
        flush()
        return documents


_BUILTIN_READERS: dict[str, ReaderFactory] = {
    ".txt": TextReader,
    ".text": TextReader,
    ".md": MarkdownReader,
    ".markdown": MarkdownReader,
}
_readers: dict[str, ReaderFactory] = dict(_BUILTIN_READERS)
_readers_lock = threading.Lock()


def register_reader(suffix: str, factory: ReaderFactory) -> None:
    """Make :func:`read_documents` read files ending in ``suffix`` (``".pdf"``) with
    ``factory(path)`` (an adapter over a PDF or HTML library); replaces an earlier one."""
    if not suffix.startswith(".") or len(suffix) < 2:
        raise ConfigurationError(f"A suffix starts with a dot, like '.pdf', got {suffix!r}")
    if not callable(factory):
        raise ConfigurationError(f"The reader factory for {suffix} is not callable: {factory!r}")
    with _readers_lock:
        _readers[suffix.lower()] = factory


def read_documents(path: str | Path) -> list[Document]:
    """The documents of the file at ``path``, by the reader registered for its suffix."""
    path = Path(path)
    with _readers_lock:
        factory = _readers.get(path.suffix.lower())
        known = ", ".join(sorted(_readers))
    if factory is None:
        raise ConfigurationError(
            f"No reader for {path.suffix or 'files without a suffix'} ({path}); built in: {known}. "
            "Register an adapter with register_reader(suffix, factory)"
        )
    return factory(path).read()
