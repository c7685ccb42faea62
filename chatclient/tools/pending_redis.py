"""Paused tool calls and their nonces in Redis (``pip install "chatclient[redis]"``), shared by every
process that reaches the server: pause in one, resume in another, exactly once.

- :class:`RedisPendingToolCallStore`: ``SET NX PX`` (put if absent, expiry by the server's clock),
  ``GETDEL`` (take once: of N concurrent takers exactly one gets the state), ``GET`` for ``peek``.
- :class:`RedisNonceLedger`: ``SET NX PX`` redeems a nonce once; ``release`` deletes it.
- :class:`AsyncRedisPendingToolCallStore`, :class:`AsyncRedisNonceLedger`: the same commands on
  ``redis.asyncio``; the keys, expiries and answers are decided by the functions both faces share.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, PendingStateExpiredError, PendingStateNotFoundError
from . import pending as _pending
from .confirmation import PendingToolCalls
from .pending import _expires_at, check_state_id
from .pending_outage import store_call

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisNonceLedger", "AsyncRedisPendingToolCallStore", "RedisNonceLedger", "RedisPendingToolCallStore"]

_WEEK = 7 * 24 * 3600.0


def _client(url: str | None, client: Any, name: str, *, asynchronous: bool = False) -> Any:
    try:
        import redis
        import redis.asyncio
    except ImportError as exc:
        raise ConfigurationError('The Redis stores need redis-py: pip install "chatclient[redis]"') from exc
    if client is not None:
        return client
    if url is None:
        raise ConfigurationError(f"{name} needs a url or a client")
    return redis.asyncio.Redis.from_url(url) if asynchronous else redis.Redis.from_url(url)


def _ttl_ms(expires_at: float | None, default: float) -> int:
    seconds = (expires_at - time.time()) if expires_at is not None else default
    return max(1, int(seconds * 1000))


def _to_save(pending: PendingToolCalls, ttl: float | None) -> tuple[str, str, int]:
    """The new id, the stored JSON and its expiry in ms; refuses a state that already expired."""
    expires_at = _expires_at(pending, ttl)
    if expires_at is not None and expires_at <= time.time():
        raise PendingStateExpiredError("The pending tool calls already expired; nothing was stored")
    return _pending._new_id(), pending.model_dump_json(), _ttl_ms(expires_at, _WEEK)


def _saved(state_id: str, stored: Any) -> str:
    if not stored:  # a 192-bit random id collided: refuse rather than overwrite
        raise PendingStateNotFoundError("A pending state id collided; nothing was stored")
    return state_id


def _taken(raw: bytes | str | None) -> PendingToolCalls:
    if raw is None:
        raise PendingStateNotFoundError(
            "No pending tool calls under this id (unknown, already resumed, or expired); nothing ran"
        )
    return PendingToolCalls.model_validate_json(raw)


class RedisPendingToolCallStore:
    """Paused states under ``{prefix}pending:{id}``; ``ttl`` (seconds) bounds how long one waits."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | None = None,
        prefix: str = "chatclient:",
        ttl: float | None = 3600.0,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__), client is None
        self._prefix, self._ttl = f"{prefix}pending:", ttl

    def save(self, pending: PendingToolCalls) -> str:
        state_id, state, px = _to_save(pending, self._ttl)
        with store_call(self, "save"):
            return _saved(state_id, self._redis.set(self._prefix + state_id, state, nx=True, px=px))

    def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "take"):
            return _taken(self._redis.getdel(self._prefix + state_id))

    def peek(self, state_id: str) -> PendingToolCalls:
        """The state, left in place (for UIs and approver checks); raises as ``take`` does once it
        is taken or expired (Redis expires it, so both read as not found)."""
        check_state_id(state_id)
        with store_call(self, "peek"):
            return _taken(self._redis.get(self._prefix + state_id))

    def discard(self, state_id: str) -> bool:
        check_state_id(state_id)
        with store_call(self, "discard"):
            return bool(self._redis.delete(self._prefix + state_id))

    def purge_expired(self) -> int:
        """Nothing to do: the server expires keys itself."""
        return 0

    def close(self) -> None:
        if self._own:
            self._redis.close()


class AsyncRedisPendingToolCallStore:
    """The async face of :class:`RedisPendingToolCallStore`, on ``redis.asyncio``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.asyncio.Redis | None = None,
        prefix: str = "chatclient:",
        ttl: float | None = 3600.0,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__, asynchronous=True), client is None
        self._prefix, self._ttl = f"{prefix}pending:", ttl

    async def save(self, pending: PendingToolCalls) -> str:
        state_id, state, px = _to_save(pending, self._ttl)
        with store_call(self, "save"):
            return _saved(state_id, await self._redis.set(self._prefix + state_id, state, nx=True, px=px))

    async def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "take"):
            return _taken(await self._redis.getdel(self._prefix + state_id))

    async def peek(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "peek"):
            return _taken(await self._redis.get(self._prefix + state_id))

    async def discard(self, state_id: str) -> bool:
        check_state_id(state_id)
        with store_call(self, "discard"):
            return bool(await self._redis.delete(self._prefix + state_id))

    async def purge_expired(self) -> int:
        return 0

    async def close(self) -> None:
        if self._own:
            await self._redis.aclose()


class RedisNonceLedger:
    """Redeemed nonces under ``{prefix}nonce:{nonce}``, kept until the state would expire (or for
    ``retention`` seconds when it has no expiry)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | None = None,
        prefix: str = "chatclient:",
        retention: float = _WEEK,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__), client is None
        self._prefix, self._retention = f"{prefix}nonce:", retention

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        with store_call(self, "redeem"):
            return bool(self._redis.set(self._prefix + nonce, b"1", nx=True, px=_ttl_ms(expires_at, self._retention)))

    def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            self._redis.delete(self._prefix + nonce)

    def close(self) -> None:
        if self._own:
            self._redis.close()


class AsyncRedisNonceLedger:
    """The async face of :class:`RedisNonceLedger`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.asyncio.Redis | None = None,
        prefix: str = "chatclient:",
        retention: float = _WEEK,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__, asynchronous=True), client is None
        self._prefix, self._retention = f"{prefix}nonce:", retention

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        px = _ttl_ms(expires_at, self._retention)
        with store_call(self, "redeem"):
            return bool(await self._redis.set(self._prefix + nonce, b"1", nx=True, px=px))

    async def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            await self._redis.delete(self._prefix + nonce)

    async def close(self) -> None:
        if self._own:
            await self._redis.aclose()
