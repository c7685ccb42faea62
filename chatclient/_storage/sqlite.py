"""The one SQLite connection manager: memory's session log and the pending stores open their file
through it, so both get the same settings.

- One connection per thread (``check_same_thread=False`` so ``close`` may close them all), in
  autocommit mode (``isolation_level=None``): a statement is its own transaction, a flow opens one.
- ``journal_mode=WAL``: readers never wait for the writer, and processes of one machine share the file.
- A 30 s busy timeout: a writer waits for the write lock instead of failing at once.
- ``synchronous``: ``FULL`` by default (a commit is on disk before it returns, so a redeemed nonce
  or a saved state survives a power loss). Memory's log asks for ``NORMAL``, its documented choice:
  a power loss may lose its last turns, whole, never half of one.
- ``checkpoint_every``: WAL checkpoints in a background thread (:mod:`.checkpoint`) instead of in the
  request that crosses SQLite's threshold; ``None`` keeps SQLite's automatic checkpoint.
- ``close`` closes every thread's connection (an async face's worker threads too), and stops the
  checkpoint thread; a later call opens new ones.
- ``driver`` and ``on_open``: a store that loads an SQLite extension (the vector store's sqlite-vec)
  may need another build of the ``sqlite3`` module (``pysqlite3``) and a step on each new connection.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .sql import Flow, Rows, Statement, run_flow

if TYPE_CHECKING:
    from .checkpoint import Checkpointer

__all__ = ["BUSY_TIMEOUT", "SqliteDatabase", "Stamp"]

T = TypeVar("T")
Stamp = tuple[int, int]
"""``(connection number, PRAGMA data_version)``: nothing committed by another connection since."""

BUSY_TIMEOUT = 30.0
"""Seconds a statement waits for another connection's lock before it fails."""

_connections = itertools.count(1)


class SqliteDatabase:
    """One connection per thread to one file; runs flows in a write transaction or as plain reads."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        checkpoint_every: int | None = None,
        driver: ModuleType = sqlite3,
        on_open: Callable[[Any], None] | None = None,
    ) -> None:
        self.path = str(path)
        self.driver, self._on_open = driver, on_open
        self.synchronous = synchronous
        self.checkpointer: Checkpointer | None = None
        if checkpoint_every:
            from .checkpoint import Checkpointer  # its thread machinery only for a store that asks

            self.checkpointer = Checkpointer(self.path, every=checkpoint_every)
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []  # every thread's, so close() closes them all
        self._opened_lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened with the settings above on first use."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self.driver.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
            if self._on_open is not None:
                try:
                    self._on_open(db)
                except BaseException:
                    db.close()
                    raise
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous}")
            if self.checkpointer is not None:
                db.execute("PRAGMA wal_autocheckpoint=0")  # the checkpoint thread does it
            with self._opened_lock:
                self._opened.append(db)
            self._local.db, self._local.number = db, next(_connections)
        return db

    def stamp(self) -> Stamp:
        """This thread's connection and its data version (it changes when another connection commits)."""
        db = self.connection()
        return self._local.number, db.execute("PRAGMA data_version").fetchone()[0]

    def number(self) -> int:
        """Which connection this thread uses (a new one after ``close``)."""
        self.connection()
        return int(self._local.number)

    def write(self, flow: Flow[T]) -> T:
        """Run ``flow`` in one transaction that holds the write lock from its start."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            result = run_flow(flow, self._executor(db))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return result

    def write_one(self, statement: Statement) -> int | None:
        """One statement in its own transaction (SQLite's autocommit: atomic by itself, and it takes
        the write lock when it starts, so the busy timeout applies): the rows it changed, or ``None``
        when it failed on a constraint, with nothing written."""
        try:
            changed = self.connection().execute(*statement).rowcount
        except self.driver.IntegrityError:
            return None
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return changed

    def read(self, flow: Flow[T]) -> T:
        return run_flow(flow, self._executor(self.connection()))

    def read_consistent(self, flow: Flow[T]) -> T:
        """A read of several statements from one snapshot of the file."""
        db = self.connection()
        db.execute("BEGIN")
        try:
            return run_flow(flow, self._executor(db))
        finally:
            db.execute("COMMIT")

    @staticmethod
    def _executor(db: sqlite3.Connection) -> Callable[[Statement], Rows]:
        def execute(statement: Statement) -> Rows:
            return db.execute(*statement).fetchall()

        return execute

    def close(self) -> None:
        """Close every thread's connection and stop the checkpoint thread (a later call opens new ones)."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
            self._local = threading.local()
        for db in opened:
            db.close()
        if self.checkpointer is not None:
            self.checkpointer.close()
