"""Leases for the ``serialize`` concurrency policy: one turn at a time per conversation.

A lease is a token held on a session until it is released or its ``ttl`` runs out (so a crashed
holder cannot block the conversation for ever). ``try_lease`` is atomic on every backend
(in-memory lock, an SQLite/PostgreSQL lease row, Redis ``SET NX PX``); ``release_lease`` only
releases the caller's own token. Waiting is polling with a growing pause, because not every backend
can notify a waiter.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Protocol, runtime_checkable

from ..errors import ChatClientError

__all__ = ["AsyncSessionLease", "SessionBusyError", "SessionLease", "acquire", "aacquire", "new_token"]

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
