"""A pending store's (or nonce ledger's) driver failure as one chatclient error naming the store.

A resume whose store is down (Redis unreachable at ``take``, PostgreSQL restarted) raises
:class:`~chatclient.errors.PendingStoreError` before anything runs, never the driver's raw error;
chatclient's own answers (not found, expired, reused) pass as they are. The drivers are never
imported here: a failure is recognised by the module its class comes from.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ..errors import ChatClientError, PendingStoreError

__all__ = ["atwice", "is_store_failure", "store_call", "take_mark", "twice"]

T = TypeVar("T")

_DRIVERS = frozenset({"redis", "psycopg", "psycopg_pool", "sqlite3"})

_AFTER = {
    "save": "the paused state was not stored",
    "take": "nothing ran; resume again once the store is back",
    "peek": "nothing ran; the state was not read",
    "discard": "the state may still be stored",
    "redeem": "nothing ran; resume again once the ledger is back",
    "release": "the nonce may still be redeemed",
    "purge_expired": "expired states may still be stored",
}


def is_store_failure(exc: BaseException) -> bool:
    """A connection lost or refused, a timeout, or any error the store's driver raised."""
    if isinstance(exc, ChatClientError):
        return False
    if isinstance(exc, OSError):
        return True
    return any(cls.__module__.split(".")[0] in _DRIVERS for cls in type(exc).__mro__)


@contextmanager
def store_call(store: object, operation: str) -> Iterator[None]:
    """Run one store operation; a driver failure becomes ``PendingStoreError`` from it. Used as a
    plain ``with`` around the ``await`` in the async faces too."""
    try:
        yield
    except Exception as exc:
        if not is_store_failure(exc):
            raise
        name = type(store).__name__
        raise PendingStoreError(
            f"{name}.{operation} failed, the store is unreachable or failed ({type(exc).__name__}: {exc}); "
            f"{_AFTER.get(operation, 'nothing ran')}",
            store=name,
        ) from exc


def twice(lost: Callable[[BaseException], bool], call: Callable[[], T]) -> T:
    """``call``, sent once more when it failed with a lost connection (``lost`` says which errors
    are): the same arguments, so a save, take or redeem carrying its token is recognised as the
    same caller by the store."""
    try:
        return call()
    except Exception as exc:
        if not lost(exc):
            raise
    return call()


async def atwice(lost: Callable[[BaseException], bool], call: Callable[[], Awaitable[T]]) -> T:
    """:func:`twice` for a coroutine function."""
    try:
        return await call()
    except Exception as exc:
        if not lost(exc):
            raise
    return await call()


def take_mark() -> str:
    """What a take puts before the state it hands out: ``taken:<random token>`` and a newline
    (a state is JSON, so it never starts with ``taken:``)."""
    return f"taken:{secrets.token_hex(16)}\n"
