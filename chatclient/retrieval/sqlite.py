"""The embedded default: documents and their vectors in one SQLite file, searched with sqlite-vec
(``pip install "chatclient[sqlite-vec]"``). A file, nothing to run.

Search is exact: ``vec_distance_cosine`` (sqlite-vec's SIMD code) over the rows that pass the
filter, best first. sqlite-vec has no approximate index, and an exact scan keeps every filter
exact too; its cost grows with the number of documents (see the retrieval benchmark).

sqlite-vec is a loadable extension. Python's own ``sqlite3`` can load it when it was built with
extension loading (Debian's and most Linux distributions' are); some builds (pyenv's default, the
python.org macOS installer) are not, and then ``pysqlite3`` is used when installed (the extra
installs ``pysqlite3-binary`` on Linux x86-64).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .._storage.sql import Flow, check_prefix
from .._storage.sqlite import SqliteDatabase
from ..errors import ConfigurationError
from ._codec import decode, encode_media, encode_metadata, float32_blob
from ._filter_sql import SQLITE, to_sql
from .document import Document
from .embedding import EmbeddingModel
from .errors import VectorStoreError
from .filters import Filter
from .store import SearchRequest, check_vector, query_vector, vectors_for
from .threaded import ThreadedVectorStore

__all__ = ["MMAP_SIZE", "AsyncSqliteVectorStore", "SqliteVectorStore", "sqlite_driver"]

_ROWS_PER_INSERT = 100  # 6 parameters a row: far below SQLite's limit of 32,766
_IDS_PER_DELETE = 500


def sqlite_driver() -> ModuleType:
    """A ``sqlite3`` module that can load sqlite-vec, or a clear error saying what to install."""
    try:
        import sqlite_vec  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError('SqliteVectorStore needs sqlite-vec: pip install "chatclient[sqlite-vec]"') from exc
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        from pysqlite3 import dbapi2
    except ImportError as exc:
        raise ConfigurationError(
            "This Python's sqlite3 module cannot load extensions (it was built without "
            "--enable-loadable-sqlite-extensions), so sqlite-vec cannot be loaded: install pysqlite3-binary "
            "(Linux x86-64) or pysqlite3, or use a Python whose sqlite3 can load extensions"
        ) from exc
    return dbapi2  # type: ignore[no-any-return]


MMAP_SIZE = 1 << 30
"""Bytes of the file a connection reads through memory mapping: a search scans every vector, and
reading the pages mapped instead of copied through SQLite's page cache made a scan of 100,000
vectors of 384 dimensions 1.6 times as fast (115 ms to 71 ms). Address space, not memory."""


def _open(db: Any) -> None:
    """Each new connection: sqlite-vec loaded, the file memory-mapped."""
    import sqlite_vec

    db.enable_load_extension(True)
    try:
        sqlite_vec.load(db)
    finally:
        db.enable_load_extension(False)
    db.execute(f"PRAGMA mmap_size = {MMAP_SIZE}").fetchall()


class SqliteVectorStore:
    """A :class:`~chatclient.retrieval.VectorStore` in the SQLite file at ``path``, tables
    ``{prefix}vector_document`` and ``{prefix}vector_setting``. The vector dimension is fixed by the
    first document added (or by ``dimensions``) and kept in the file; ``embedding_model`` embeds
    added texts and query texts (``None`` when every call passes vectors)."""

    def __init__(
        self,
        path: str | Path,
        embedding_model: EmbeddingModel | None = None,
        *,
        prefix: str = "chatclient_",
        dimensions: int | None = None,
    ) -> None:
        self.embedding_model = embedding_model
        self._db = SqliteDatabase(path, driver=sqlite_driver(), on_open=_open)
        self._table = f"{check_prefix(prefix)}vector_document"
        self._settings = f"{prefix}vector_setting"
        wanted = dimensions if dimensions is not None else getattr(embedding_model, "dimensions", None)
        self._dimensions: int | None = self._db.write(self._schema(wanted))

    def _schema(self, dimensions: int | None) -> Flow[int | None]:
        yield (
            f"CREATE TABLE IF NOT EXISTS {self._table} (id TEXT PRIMARY KEY, text TEXT NOT NULL, "
            "metadata TEXT NOT NULL, media TEXT, embedding BLOB NOT NULL)",
            (),
        )
        yield (f"CREATE TABLE IF NOT EXISTS {self._settings} (name TEXT PRIMARY KEY, value INTEGER NOT NULL)", ())
        return (yield from self._fix_dimensions(dimensions))

    def _fix_dimensions(self, dimensions: int | None) -> Flow[int | None]:
        """The file's dimension; ``dimensions`` becomes it when the file has none, else must equal it."""
        rows = yield (f"SELECT value FROM {self._settings} WHERE name = 'dimensions'", ())
        held = int(rows[0][0]) if rows else None
        if held is None and dimensions is not None:
            yield (f"INSERT INTO {self._settings} (name, value) VALUES ('dimensions', ?)", (dimensions,))
            return dimensions
        if held is not None and dimensions is not None and held != dimensions:
            raise VectorStoreError(f"This store holds vectors of {held} dimensions, got one of {dimensions}")
        return held

    def _put(self, documents: Sequence[Document], vectors: list[list[float]]) -> Flow[int | None]:
        dimensions = yield from self._fix_dimensions(len(vectors[0]))
        for vector in vectors:
            check_vector(vector, dimensions)
        for start in range(0, len(documents), _ROWS_PER_INSERT):
            rows = list(zip(documents[start : start + _ROWS_PER_INSERT], vectors[start:], strict=False))
            values = ", ".join("(?, ?, ?, ?, ?)" for _ in rows)
            params: list[Any] = []
            for document, vector in rows:
                params += [document.id, document.text, encode_metadata(document), encode_media(document)]
                params.append(float32_blob(vector))
            yield (
                f"INSERT INTO {self._table} (id, text, metadata, media, embedding) VALUES {values} "
                "ON CONFLICT (id) DO UPDATE SET text = excluded.text, metadata = excluded.metadata, "
                "media = excluded.media, embedding = excluded.embedding",
                tuple(params),
            )
        return dimensions

    def add(self, documents: Sequence[Document], embeddings: Sequence[Sequence[float]] | None = None) -> None:
        vectors = vectors_for(documents, embeddings, self.embedding_model)
        if vectors:
            self._dimensions = self._db.write(self._put(documents, vectors))

    def delete(self, ids: Sequence[str]) -> int:
        unique = list(dict.fromkeys([ids] if isinstance(ids, str) else ids))

        def flow() -> Flow[int]:
            deleted = 0
            for start in range(0, len(unique), _IDS_PER_DELETE):
                chunk = unique[start : start + _IDS_PER_DELETE]
                marks = ", ".join("?" for _ in chunk)
                deleted += len((yield (f"DELETE FROM {self._table} WHERE id IN ({marks}) RETURNING id", tuple(chunk))))
            return deleted

        return self._db.write(flow()) if unique else 0

    def delete_where(self, filter: Filter) -> int:
        condition, params = to_sql(SQLITE, filter)

        def flow() -> Flow[int]:
            return len((yield (f"DELETE FROM {self._table} WHERE {condition} RETURNING id", tuple(params))))

        return self._db.write(flow())

    def search(self, request: SearchRequest | str) -> list[Document]:
        request = SearchRequest.of(request)
        vector = query_vector(request, self.embedding_model)
        if self._dimensions is None:
            self._dimensions = self._db.read(self._fix_dimensions(None))
            if self._dimensions is None:
                return []  # nothing was ever added
        check_vector(vector, self._dimensions)
        where, params = ("", []) if request.filter is None else to_sql(SQLITE, request.filter)
        sql = (
            f"SELECT id, text, metadata, media, 1.0 - vec_distance_cosine(embedding, ?) AS score "
            f"FROM {self._table}{f' WHERE {where}' if where else ''} ORDER BY score DESC, id LIMIT ?"
        )
        threshold = request.score_threshold

        def flow() -> Flow[list[Document]]:
            rows = yield (sql, (float32_blob(vector), *params, request.top_k))
            # Best first, so dropping the rows below the threshold after the LIMIT keeps the same
            # documents as a WHERE on the score would, without computing each distance twice.
            return [decode(*row) for row in rows if threshold is None or row[4] >= threshold]

        return self._db.read(flow())

    def close(self) -> None:
        self._db.close()


class AsyncSqliteVectorStore(ThreadedVectorStore):
    """:class:`SqliteVectorStore` for an event loop: texts are embedded with ``aembed``, and the
    file is read and written in worker threads."""

    def __init__(
        self,
        path: str | Path,
        embedding_model: EmbeddingModel | None = None,
        *,
        prefix: str = "chatclient_",
        dimensions: int | None = None,
    ) -> None:
        self.store = SqliteVectorStore(path, embedding_model, prefix=prefix, dimensions=dimensions)
        super().__init__(self.store)

    async def close(self) -> None:
        from .._storage.threads import in_thread

        await in_thread(self.store.close)
