"""Paused tool calls and their nonces in Redis (``pip install "chatclient[redis]"``), shared by every
process that reaches the server: pause in one, resume in another, exactly once.

- :class:`RedisPendingToolCallStore`: ``SET NX PX`` (put if absent, expiry by the server's clock),
  a take script (take once: of N concurrent takers exactly one gets the state), ``GET`` for ``peek``.
- :class:`RedisNonceLedger`: a redeem script (a nonce once); ``release`` deletes it.
- :class:`AsyncRedisPendingToolCallStore`, :class:`AsyncRedisNonceLedger`: the same commands on
  ``redis.asyncio``; the keys, expiries and answers are decided by the functions both faces share.

A save, take, peek, redeem or release whose reply is lost (the connection dropped after the server
ran it) is sent once more, and the second answer is the first one's: a take carries a random token
that the server keeps with the state it handed out, a save or a redeem what it put, so the retry is
recognised as the same caller instead of being told the state is gone (with ``GETDEL`` it would be,
and the paused turn lost with it) or the id taken. A taken state stays as ``taken:<token>`` for a
minute, answering only that token; ``peek`` and ``discard`` see it as gone. ``discard`` is not
sent twice (a lost reply there raises: the state may still be stored).
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any

import chatclient.pending.state as _pending

from .._storage.redis import async_redis_client, redis_client
from ..errors import PendingStateExpiredError, PendingStateNotFoundError
from ..tools.confirmation import PendingToolCalls
from .outage import atwice, store_call, take_mark, twice
from .state import _expires_at, check_secret, check_state_id, dump_state, load_state, open_entry, seal_entry

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisNonceLedger", "AsyncRedisPendingToolCallStore", "RedisNonceLedger", "RedisPendingToolCallStore"]

_WEEK = 7 * 24 * 3600.0
_CLAIM_MS = 60_000
"""How long a taken state answers its taker's retry."""
_TAKEN = "taken:"

# KEYS[1] the state; ARGV[1] "taken:<token>\n", ARGV[2] how long the mark stays (ms). The state, or
# nil: unknown, expired, or taken by another token. A state is JSON or keyed text (see dump_state),
# so it never starts with "taken:".
_TAKE = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
if string.sub(value, 1, 6) == 'taken:' then
  if string.sub(value, 1, #ARGV[1]) == ARGV[1] then return string.sub(value, #ARGV[1] + 1) end
  return false
end
redis.call('SET', KEYS[1], ARGV[1] .. value, 'PX', ARGV[2])
return value
"""
# KEYS[1] the state: deleted unless taken; 1 when a state waiting to be resumed was there.
_DISCARD = """
local value = redis.call('GET', KEYS[1])
if not value or string.sub(value, 1, 6) == 'taken:' then return 0 end
return redis.call('DEL', KEYS[1])
"""
# KEYS[1] a new state (ARGV[1] its JSON) or a nonce (ARGV[1] a token); ARGV[2] the expiry (ms).
# 1: put now, or by this very call before its reply was lost; 0: the key was someone else's.
_PUT_ONCE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
"""
# KEYS[1] the state, KEYS[2] its journal ("<version>\n<entry>"); ARGV[1] the new version, ARGV[2] the
# entry. 1: written at ARGV[1] - 1 (or by this very call before its reply was lost); 0: the journal
# moved, or the state is gone. The journal expires with the state.
_RECORD = """
local state = redis.call('GET', KEYS[1])
if not state or string.sub(state, 1, 6) == 'taken:' then return 0 end
local new = ARGV[1] .. '\\n' .. ARGV[2]
local current = redis.call('GET', KEYS[2])
if current == new then return 1 end
local version = 0
if current then version = tonumber(string.match(current, '^(%d+)')) end
if version ~= tonumber(ARGV[1]) - 1 then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('SET', KEYS[2], new, 'PX', ttl) else redis.call('SET', KEYS[2], new) end
return 1
"""


def _journal(raw: bytes | str | None, state_id: str, secret: bytes | None) -> tuple[int, str | None]:
    if raw is None:
        return 0, None
    text = raw.decode() if isinstance(raw, bytes) else raw
    version, _, entry = text.partition("\n")
    return int(version), open_entry(secret, state_id, int(version), entry)


def _is_lost_connection(exc: BaseException) -> bool:
    import redis

    return isinstance(exc, (redis.ConnectionError, redis.TimeoutError))


def _client(url: str | None, client: Any, name: str, *, asynchronous: bool = False) -> Any:
    """The shared plumbing's client, typed loosely: the scripts here take mixed str and int arguments."""
    return async_redis_client(url, client, name) if asynchronous else redis_client(url, client, name)


def _ttl_ms(expires_at: float | None, default: float) -> int:
    seconds = (expires_at - time.time()) if expires_at is not None else default
    return max(1, int(seconds * 1000))


def _to_save(pending: PendingToolCalls, ttl: float | None, secret: bytes | None) -> tuple[str, str, int]:
    """The new id, the stored text and its expiry in ms; refuses a state that already expired."""
    expires_at = _expires_at(pending, ttl)
    if expires_at is not None and expires_at <= time.time():
        raise PendingStateExpiredError("The pending tool calls already expired; nothing was stored")
    state_id = _pending._new_id()
    return state_id, dump_state(pending, state_id, expires_at, secret), _ttl_ms(expires_at, _WEEK)


def _saved(state_id: str, stored: Any) -> str:
    if not stored:  # a 192-bit random id collided: refuse rather than overwrite
        raise PendingStateNotFoundError("A pending state id collided; nothing was stored")
    return state_id


def _taken(raw: bytes | str | None, state_id: str, secret: bytes | None) -> PendingToolCalls:
    if isinstance(raw, bytes):
        raw = raw.decode()
    if raw is None or raw.startswith(_TAKEN):  # a peek at a state someone took
        raise PendingStateNotFoundError(
            "No pending tool calls under this id (unknown, already resumed, or expired); nothing ran"
        )
    return load_state(raw, state_id, secret)


class RedisPendingToolCallStore:
    """Paused states under ``{prefix}pending:{id}``; ``ttl`` (seconds) bounds how long one waits.
    With a ``secret``, a state rewritten on the server by anyone without it is refused."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | None = None,
        prefix: str = "chatclient:",
        ttl: float | None = 3600.0,
        secret: bytes | None = None,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__), client is None
        self._prefix, self._ttl, self._secret = f"{prefix}pending:", ttl, check_secret(secret)
        self._take, self._discard = self._redis.register_script(_TAKE), self._redis.register_script(_DISCARD)
        self._put_once = self._redis.register_script(_PUT_ONCE)
        self._record = self._redis.register_script(_RECORD)
        self._journal_prefix = f"{prefix}pending-journal:"

    def save(self, pending: PendingToolCalls) -> str:
        state_id, state, px = _to_save(pending, self._ttl, self._secret)
        keys, args = [self._prefix + state_id], [state, px]
        with store_call(self, "save"):
            return _saved(state_id, twice(_is_lost_connection, lambda: self._put_once(keys=keys, args=args)))

    def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        keys, args = [self._prefix + state_id], [take_mark(), _CLAIM_MS]
        with store_call(self, "take"):
            return _taken(twice(_is_lost_connection, lambda: self._take(keys=keys, args=args)), state_id, self._secret)

    def peek(self, state_id: str) -> PendingToolCalls:
        """The state, left in place (for UIs and approver checks); raises as ``take`` does once it
        is taken or expired (Redis expires it, so both read as not found)."""
        check_state_id(state_id)
        with store_call(self, "peek"):
            return _taken(
                twice(_is_lost_connection, lambda: self._redis.get(self._prefix + state_id)), state_id, self._secret
            )

    def discard(self, state_id: str) -> bool:
        check_state_id(state_id)
        with store_call(self, "discard"):
            return bool(self._discard(keys=[self._prefix + state_id]))

    def progress(self, state_id: str) -> tuple[int, str | None]:
        """The journal of the turn resumed from this state (see ``JournaledStore``)."""
        check_state_id(state_id)
        with store_call(self, "progress"):
            raw = twice(_is_lost_connection, lambda: self._redis.get(self._journal_prefix + state_id))
            return _journal(raw, state_id, self._secret)

    def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        keys = [self._prefix + check_state_id(state_id), self._journal_prefix + state_id]
        args = [version + 1, seal_entry(self._secret, state_id, version + 1, entry)]
        with store_call(self, "record_progress"):
            return bool(twice(_is_lost_connection, lambda: self._record(keys=keys, args=args)))

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
        secret: bytes | None = None,
    ) -> None:
        self._redis, self._own = _client(url, client, type(self).__name__, asynchronous=True), client is None
        self._prefix, self._ttl, self._secret = f"{prefix}pending:", ttl, check_secret(secret)
        self._take, self._discard = self._redis.register_script(_TAKE), self._redis.register_script(_DISCARD)
        self._put_once = self._redis.register_script(_PUT_ONCE)
        self._record = self._redis.register_script(_RECORD)
        self._journal_prefix = f"{prefix}pending-journal:"

    async def save(self, pending: PendingToolCalls) -> str:
        state_id, state, px = _to_save(pending, self._ttl, self._secret)
        keys, args = [self._prefix + state_id], [state, px]
        with store_call(self, "save"):
            return _saved(state_id, await atwice(_is_lost_connection, lambda: self._put_once(keys=keys, args=args)))

    async def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        keys, args = [self._prefix + state_id], [take_mark(), _CLAIM_MS]
        with store_call(self, "take"):
            return _taken(
                await atwice(_is_lost_connection, lambda: self._take(keys=keys, args=args)), state_id, self._secret
            )

    async def peek(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "peek"):
            return _taken(
                await atwice(_is_lost_connection, lambda: self._redis.get(self._prefix + state_id)),
                state_id,
                self._secret,
            )

    async def discard(self, state_id: str) -> bool:
        check_state_id(state_id)
        with store_call(self, "discard"):
            return bool(await self._discard(keys=[self._prefix + state_id]))

    async def progress(self, state_id: str) -> tuple[int, str | None]:
        check_state_id(state_id)
        with store_call(self, "progress"):
            key = self._journal_prefix + state_id
            return _journal(await atwice(_is_lost_connection, lambda: self._redis.get(key)), state_id, self._secret)

    async def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        keys = [self._prefix + check_state_id(state_id), self._journal_prefix + state_id]
        args = [version + 1, seal_entry(self._secret, state_id, version + 1, entry)]
        with store_call(self, "record_progress"):
            return bool(await atwice(_is_lost_connection, lambda: self._record(keys=keys, args=args)))

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
        self._redeem = self._redis.register_script(_PUT_ONCE)

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        keys, args = [self._prefix + nonce], [secrets.token_hex(16), _ttl_ms(expires_at, self._retention)]
        with store_call(self, "redeem"):
            return bool(twice(_is_lost_connection, lambda: self._redeem(keys=keys, args=args)))

    def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            twice(_is_lost_connection, lambda: self._redis.delete(self._prefix + nonce))

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
        self._redeem = self._redis.register_script(_PUT_ONCE)

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        keys, args = [self._prefix + nonce], [secrets.token_hex(16), _ttl_ms(expires_at, self._retention)]
        with store_call(self, "redeem"):
            return bool(await atwice(_is_lost_connection, lambda: self._redeem(keys=keys, args=args)))

    async def release(self, nonce: str) -> None:
        with store_call(self, "release"):
            await atwice(_is_lost_connection, lambda: self._redis.delete(self._prefix + nonce))

    async def close(self) -> None:
        if self._own:
            await self._redis.aclose()
