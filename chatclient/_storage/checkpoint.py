"""WAL checkpoints off the request path: one background thread per SQLite store.

With SQLite's automatic checkpoint, the commit that crosses the threshold (1,000 WAL pages) copies
the whole WAL back into the database file before it returns: about one turn in two hundred pays
for all of them. The store's request connections turn that off (``wal_autocheckpoint=0``) and a
daemon thread runs ``PRAGMA wal_checkpoint(PASSIVE)`` instead, woken by every ``every``-th commit of
this store (never by a timer, so an idle store costs nothing). Durability is unchanged: under
``synchronous=NORMAL`` a committed WAL frame is as durable as the main file (a crash loses nothing
committed; a power loss may lose the last transactions, whole, as before).

The WAL starts over from its beginning when a writer finds every frame copied back. Under a steady
stream of commits a passive checkpoint alone never gets there (the commits made while it copies
are left), so the WAL only grew, to the ``limit`` truncation (40 MB), every frame landing on a new
page of the file that the kernel allocates and zeroes (five pages a turn). So the thread follows
the passive checkpoint (the bulk, no lock a writer waits for) with a ``RESTART`` one once the WAL
holds more than ``restart_after`` frames (8 MB by default; rarely, since writers wait for it): it
holds writers off while it copies the few frames committed meanwhile and waits
(``RESTART_WAIT_MS`` at most) for readers of the old frames, and the next commit rewrites the
WAL's first pages, already in the page cache. If readers kept it from restarting and the WAL has
grown past ``limit`` frames, the thread runs a ``TRUNCATE`` checkpoint instead, which empties the
file, with the same short wait (a reader that stays only delays it to the next pass). Each process
checkpoints with its own thread; SQLite lets one checkpointer run at a time, so concurrent ones are
safe (one that meets another just does nothing).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from typing import Any

from ..errors import ConfigurationError

__all__ = ["Checkpointer"]

_log = logging.getLogger("chatclient.memory")


class Checkpointer:
    """Counts a store's commits and wakes its checkpoint thread every ``every`` of them."""

    def __init__(self, path: str, *, every: int = 200, limit: int = 10_000, restart_after: int = 2_000) -> None:
        if every <= 0:
            raise ConfigurationError(f"checkpoint_every must be a positive number of commits, got {every}")
        self.path, self.every, self.limit, self.restart_after = path, every, limit, restart_after
        self._commits = 0
        self._lock = threading.Lock()
        self._state: _State | None = None
        self.checkpoints = 0
        """Checkpoints the thread has run (for tests and monitoring)."""
        self.progress = threading.Condition()
        """Notified after each checkpoint (see :meth:`wait_for`)."""

    def committed(self) -> None:
        """After each commit on a request connection (a plain counter: no lock on the hot path;
        a lost increment between threads only delays one wake-up)."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self.wake()

    def wake(self) -> None:
        with self._lock:
            state = self._state
            if state is None or not state.thread.is_alive():
                state = self._state = _State()
                state.thread = threading.Thread(
                    target=_run,
                    args=(self.path, self.limit, self.restart_after, state, weakref.ref(self)),
                    daemon=True,
                    name=f"chatclient-sqlite-checkpoint:{self.path}",
                )
                state.thread.start()
                weakref.finalize(self, state.stop)
            state.wanted.set()

    def close(self) -> None:
        """Stop the thread (it finishes a checkpoint under way) and wait for it."""
        with self._lock:
            state, self._state = self._state, None
        if state is not None:
            state.stop()
            if state.thread is not threading.current_thread():
                state.thread.join()

    def wait_for(self, checkpoints: int, timeout: float | None = None) -> bool:
        """Wait until the thread has run ``checkpoints`` checkpoints in all; ``False`` on timeout."""
        with self.progress:
            return self.progress.wait_for(lambda: self.checkpoints >= checkpoints, timeout)

    @property
    def running(self) -> bool:
        state = self._state
        return state is not None and state.thread.is_alive()


class _State:
    """What the thread shares with its store (the thread holds no reference to the store itself,
    so a store dropped without ``close`` stops its thread when it is collected)."""

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.stopping = False
        self.thread: threading.Thread = threading.Thread()

    def stop(self) -> None:
        self.stopping = True
        self.wanted.set()


def _run(path: str, limit: int, restart_after: int, state: _State, owner: weakref.ref[Any]) -> None:
    db: sqlite3.Connection | None = None
    try:
        while True:
            state.wanted.wait()
            state.wanted.clear()
            if state.stopping:
                return
            if db is None:
                db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
            try:
                checkpoint_once(db, limit, restart_after)
            except sqlite3.Error:  # never fatal: the next wake-up tries again
                _log.warning("SQLite checkpoint of %s failed", path, exc_info=True)
                continue
            checkpointer = owner()
            if checkpointer is not None:
                with checkpointer.progress:
                    checkpointer.checkpoints += 1
                    checkpointer.progress.notify_all()
            del checkpointer
    finally:
        if db is not None:
            db.close()


RESTART_WAIT_MS = 20
"""The longest a ``RESTART`` checkpoint holds writers off waiting for the lock or for readers (it
then gives up, nothing changed, and the next wake-up tries again)."""


def checkpoint_once(db: Any, limit: int, restart_after: int) -> None:
    """One checkpoint pass on the thread's own connection ``db``: the bulk copied without blocking
    anyone, then, past ``restart_after`` frames, the WAL made to start over (emptied past ``limit``)."""
    _busy, frames, _copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    if frames > limit:  # readers kept the WAL from restarting: empty it
        mode = "TRUNCATE"
    elif frames > restart_after:
        mode = "RESTART"
    else:  # short enough: its pages, once written, stay in the page cache
        return
    # Either mode holds writers off while it waits for readers, so it waits RESTART_WAIT_MS at most,
    # never the busy timeout (30 s: one long reader would stall every turn); a reader that stays
    # only delays it to the next pass.
    db.execute(f"PRAGMA busy_timeout = {RESTART_WAIT_MS}")
    try:
        db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    finally:
        db.execute("PRAGMA busy_timeout = 30000")
