"""The session log in an SQLite file: the embedded default, no server, shared by the processes of
one machine. WAL mode; an append is one ``BEGIN IMMEDIATE`` transaction, so concurrent writers
(threads or processes) queue and each sees the version the one before it left."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ._sql import SQLITE, Flow, Rows, SessionSql, Statement, run_flow
from .log import AppendResult, NewEvent, SessionEvent, check_session_id
from .repository import in_thread

__all__ = ["AsyncSqliteSessionRepository", "SqliteSessionRepository"]

T = TypeVar("T")


class SqliteDatabase:
    """One connection per thread to one file; runs flows in a write transaction or as plain reads."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._local = threading.local()

    def connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def write(self, flow: Flow[T]) -> T:
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = run_flow(flow, self._executor(db))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return result

    def read(self, flow: Flow[T]) -> T:
        return run_flow(flow, self._executor(self.connection()))

    @staticmethod
    def _executor(db: sqlite3.Connection) -> Callable[[Statement], Rows]:
        def execute(statement: Statement) -> Rows:
            return db.execute(*statement).fetchall()

        return execute

    def close(self) -> None:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


class SqliteSessionRepository:
    """Sessions in the SQLite file ``path``; tables ``{prefix}session`` and ``{prefix}session_event``."""

    def __init__(self, path: str | Path, *, prefix: str = "chatclient_", clock: Callable[[], float] = time.time):
        self._sql = SessionSql(prefix, SQLITE)
        self._db = SqliteDatabase(path)
        self._clock = clock
        self._db.write(self._sql.schema())

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        check_session_id(session_id)
        return self._db.write(self._sql.append(session_id, events, expected_version, self._clock()))

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        return self._db.read(self._sql.events(session_id, after_seq, last, types))

    def version(self, session_id: str) -> int:
        return self._db.read(self._sql.version(session_id))

    def delete(self, session_id: str) -> None:
        self._db.write(self._sql.delete(session_id))

    def close(self) -> None:
        """Close this thread's connection."""
        self._db.close()


class AsyncSqliteSessionRepository:
    """The async face: each operation of :class:`SqliteSessionRepository` runs in a worker thread."""

    def __init__(self, path: str | Path, *, prefix: str = "chatclient_", clock: Callable[[], float] = time.time):
        self.sync = SqliteSessionRepository(path, prefix=prefix, clock=clock)

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        return await in_thread(lambda: self.sync.append(session_id, events, expected_version=expected_version))

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        return await in_thread(lambda: self.sync.events(session_id, after_seq=after_seq, last=last, types=types))

    async def version(self, session_id: str) -> int:
        return await in_thread(lambda: self.sync.version(session_id))

    async def delete(self, session_id: str) -> None:
        await in_thread(lambda: self.sync.delete(session_id))
