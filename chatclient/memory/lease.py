"""Leases for the ``serialize`` concurrency policy: one turn at a time per conversation.

A lease is a token held on a session until it is released or its ``ttl`` runs out (so a crashed
holder cannot block the conversation for ever). ``try_lease`` is atomic on every backend
(in-memory lock, an SQLite/PostgreSQL lease row, Redis ``SET NX PX``); ``release_lease`` only
releases the caller's own token. Waiting is polling with a growing pause, because not every backend
can notify a waiter.

While a turn runs, its lease is renewed (:class:`LeaseKeeper`: every third of the ttl by default, from
one thread shared by the process's turns), so a turn longer than the ttl (slow tools, a long stream)
keeps it; a holder that crashed stops renewing and its lease runs out. Before the write the lease is
checked (and renewed) once more: a lease lost meanwhile is reported as :class:`SessionLeaseLostError`
after the turn is stored.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import os
import secrets
import threading
import time
from typing import Protocol, runtime_checkable

from ..errors import ChatClientError

__all__ = [
    "AsyncLeaseKeeper",
    "AsyncSessionLease",
    "LeaseKeeper",
    "SessionBusyError",
    "SessionLease",
    "SessionLeaseLostError",
    "aacquire",
    "acquire",
    "new_token",
]

logger = logging.getLogger("chatclient.memory")

_FIRST_PAUSE, _LONGEST_PAUSE = 0.002, 0.05


class SessionBusyError(ChatClientError):
    """Another turn held the conversation's lease for longer than the advisor waits."""


@runtime_checkable
class SessionLease(Protocol):
    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        """Take the session's lease for ``token`` unless someone else holds an unexpired one."""
        ...

    def release_lease(self, session_id: str, token: str) -> bool:
        """Give the lease back; ``False`` when ``token`` no longer held it (it expired)."""
        ...


@runtime_checkable
class AsyncSessionLease(Protocol):
    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool: ...

    async def release_lease(self, session_id: str, token: str) -> bool: ...


def new_token() -> str:
    return secrets.token_hex(16)


def _busy(session_id: str, timeout: float) -> SessionBusyError:
    return SessionBusyError(f"Conversation {session_id!r} stayed busy with another turn for {timeout} s; nothing ran")


def acquire(lease: SessionLease, session_id: str, token: str, *, ttl: float, timeout: float) -> None:
    """Wait for the lease (up to ``timeout`` seconds), or raise :class:`SessionBusyError`."""
    deadline, pause = time.monotonic() + timeout, _FIRST_PAUSE
    while not lease.try_lease(session_id, token, ttl):
        if time.monotonic() >= deadline:
            raise _busy(session_id, timeout)
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


async def aacquire(lease: AsyncSessionLease, session_id: str, token: str, *, ttl: float, timeout: float) -> None:
    deadline, pause = time.monotonic() + timeout, _FIRST_PAUSE
    while not await lease.try_lease(session_id, token, ttl):
        if time.monotonic() >= deadline:
            raise _busy(session_id, timeout)
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


# ------------------------------------------------------------------ keeping a lease through a turn


class SessionLeaseLostError(ChatClientError):
    """The turn's lease on the conversation ran out (or was taken) before its write: another turn
    may have run meanwhile. The completed turn **is stored** (the model answered and tools ran;
    dropping it would lose work and leave the log without it) in one atomic append after whatever
    the other writer stored; ``response`` is its reply."""

    def __init__(self, session_id: str, ttl: float, response: object) -> None:
        super().__init__(
            f"Conversation {session_id!r} lost its turn lease (lease_ttl={ttl} s) before the turn was written: "
            "another turn may have run meanwhile. The turn was stored after it; raise lease_ttl for turns this long"
        )
        self.session_id, self.ttl, self.response = session_id, ttl, response


class LeaseKeeper:
    """Renews a held lease every ``every`` seconds until :meth:`stop`, and fences the write:
    :meth:`still_held` renews once more and says whether the lease is still ours.

    The renewals of every keeper in the process run in one shared thread (:class:`_Renewals`):
    starting and joining a thread per turn cost more than the rest of a short turn."""

    def __init__(self, lease: SessionLease, session_id: str, token: str, ttl: float, every: float) -> None:
        self.lease, self.session_id, self.token, self.ttl = lease, session_id, token, ttl
        self.lost = False
        self.every, self.stopped = every, False
        self.busy = threading.Lock()
        """Held while a renewal runs: :meth:`stop` waits for one in flight, so none lands after it."""
        _renewals().add(self)

    def renew(self) -> bool:
        """One renewal (from the shared thread); ``False`` when there is nothing more to renew."""
        with self.busy:
            if self.stopped:
                return False
            try:
                if not self.lease.try_lease(self.session_id, self.token, self.ttl):
                    self.lost = True
                    return False
            except Exception:  # a store hiccup: the next renewal (or the fence) decides
                logger.warning("Renewing the lease on %r failed", self.session_id, exc_info=True)
            return True

    def still_held(self) -> bool:
        if not self.lost and not self.lease.try_lease(self.session_id, self.token, self.ttl):
            self.lost = True
        return not self.lost

    def stop(self) -> None:
        with self.busy:  # after a renewal in flight, before the caller releases the lease
            self.stopped = True


class _Renewals:
    """The process's lease renewals: one daemon thread, keepers in order of their next renewal.

    A stopped keeper is dropped when its time comes (stopping needs no wake-up). After a fork the
    child starts its own thread on its first keeper."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, LeaseKeeper]] = []
        self._changed = threading.Condition()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, keeper: LeaseKeeper) -> None:
        entry = (time.monotonic() + keeper.every, next(self._order), keeper)
        with self._changed:
            heapq.heappush(self._due, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chatclient-lease-renewals", daemon=True)
                self._thread.start()
            elif self._due[0] is entry:
                self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                _, _, keeper = heapq.heappop(self._due)
            if keeper.renew():  # outside the condition: a slow store never blocks add()
                with self._changed:
                    heapq.heappush(self._due, (time.monotonic() + keeper.every, next(self._order), keeper))


_shared: _Renewals | None = None
_shared_lock = threading.Lock()


def _renewals() -> _Renewals:
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = _Renewals()
    return _shared


def _forget_renewals() -> None:
    """In a forked child: the parent's thread does not exist there, nor do its turns."""
    global _shared, _shared_lock
    _shared, _shared_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_renewals)


class AsyncLeaseKeeper:
    """:class:`LeaseKeeper` for asyncio: the renewals run in a task."""

    def __init__(self, lease: AsyncSessionLease, session_id: str, token: str, ttl: float, every: float) -> None:
        self.lease, self.session_id, self.token, self.ttl = lease, session_id, token, ttl
        self.lost = False
        self._every = every
        self._task = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            try:
                if not await self.lease.try_lease(self.session_id, self.token, self.ttl):
                    self.lost = True
                    return
            except Exception:
                logger.warning("Renewing the lease on %r failed", self.session_id, exc_info=True)

    async def still_held(self) -> bool:
        if not self.lost and not await self.lease.try_lease(self.session_id, self.token, self.ttl):
            self.lost = True
        return not self.lost

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.wait([self._task])  # its end, without taking the caller's own cancellation for it
