"""A pending store's (or nonce ledger's) driver failure as one chatclient error naming the store.

A resume whose store is down (Redis unreachable at ``take``, PostgreSQL restarted) raises
:class:`~chatclient.errors.PendingStoreError` before anything runs, never the driver's raw error;
chatclient's own answers (not found, expired, reused) pass as they are. The drivers are never
imported here: a failure is recognised by the module its class comes from.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ChatClientError, PendingStoreError

__all__ = ["is_store_failure", "store_call"]

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
