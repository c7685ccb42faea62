"""The session log in Redis (``pip install "chatclient[redis]"``: redis-py).

One Lua script appends a batch atomically: it skips event ids already stored (same payload digest),
checks the expected version, and pushes the new events on the session's list; an event's ``seq``
is its place in that list. Keys share the ``{session}`` hash tag, so one session lives on one
Redis Cluster slot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .log import AppendResult, IdempotencyMismatch, NewEvent, SessionEvent, VersionConflict, check_session_id

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisSessionRepository", "RedisSessionRepository", "require_redis"]

# KEYS: ids hash (event id -> sha1 of payload), log list. ARGV: expected version ('' = any), then
# per event: id, payload, stored JSON. Returns {status, version, appended, replayed[, detail]}.
APPEND = """
local version = redis.call('LLEN', KEYS[2])
local fresh, replayed, seen = {}, 0, {}
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  if seen[id] then return {'twice', version, 0, 0, id} end
  seen[id] = true
  local known = redis.call('HGET', KEYS[1], id)
  if known then
    if known ~= redis.sha1hex(ARGV[i + 1]) then return {'mismatch', version, 0, 0, id} end
    replayed = replayed + 1
  else
    fresh[#fresh + 1] = i
  end
end
if #fresh > 0 and ARGV[1] ~= '' and tonumber(ARGV[1]) ~= version then
  return {'conflict', version, 0, 0}
end
for _, i in ipairs(fresh) do
  redis.call('HSET', KEYS[1], ARGV[i], redis.sha1hex(ARGV[i + 1]))
  redis.call('RPUSH', KEYS[2], ARGV[i + 2])
end
return {'ok', version + #fresh, #fresh, replayed}
"""

# KEYS: log list. ARGV: after_seq, last ('' = all). Returns {first seq, items...} atomically.
READ = """
local n = redis.call('LLEN', KEYS[1])
local start = tonumber(ARGV[1])
if ARGV[2] ~= '' then start = math.max(start, n - tonumber(ARGV[2])) end
local items = redis.call('LRANGE', KEYS[1], start, -1)
table.insert(items, 1, start + 1)
return items
"""


def require_redis() -> None:
    try:
        import redis  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError('The Redis stores need redis-py: pip install "chatclient[redis]"') from exc


class _Keys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, session_id: str) -> list[str]:
        base = f"{self.prefix}session:{{{check_session_id(session_id)}}}"
        return [f"{base}:ids", f"{base}:log"]


def _args(events: Sequence[NewEvent], expected_version: int | None, now: float) -> list[str]:
    args = ["" if expected_version is None else str(expected_version)]
    for e in events:
        stored = json.dumps([e.event_id, e.turn_id, e.type, e.payload, now])
        args += [e.event_id, e.payload, stored]
    return args


def _result(session_id: str, reply: list[Any], expected_version: int | None) -> AppendResult:
    status = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
    version = int(reply[1])
    if status == "conflict":
        raise VersionConflict(session_id, expected_version if expected_version is not None else -1, version)
    if status in ("mismatch", "twice"):
        raise IdempotencyMismatch(f"Event {reply[4]!r} of session {session_id!r} clashes with a stored or batched one")
    return AppendResult(version, int(reply[2]), int(reply[3]))


def _events(session_id: str, reply: list[Any]) -> list[SessionEvent]:
    first = int(reply[0])
    out = []
    for seq, raw in enumerate(reply[1:], first):
        event_id, turn_id, type_, payload, created_at = json.loads(raw)
        out.append(SessionEvent(session_id, seq, event_id, turn_id, type_, payload, float(created_at)))
    return out


class RedisSessionRepository:
    """Sessions in Redis at ``url`` (or on ``client``); keys start with ``prefix``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | None = None,
        prefix: str = "chatclient:",
        clock: Callable[[], float] = time.time,
    ) -> None:
        require_redis()
        import redis

        if client is None and url is None:
            raise ConfigurationError("RedisSessionRepository needs a url or a client")
        self._client = client if client is not None else redis.Redis.from_url(url)  # type: ignore[arg-type]
        self._own = client is None
        self._keys, self._clock = _Keys(prefix), clock
        self._append = self._client.register_script(APPEND)
        self._read = self._client.register_script(READ)

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        keys = self._keys(session_id)
        reply = self._append(keys=keys, args=_args(events, expected_version, self._clock()))
        return _result(session_id, reply, expected_version)

    def events(self, session_id: str, *, after_seq: int = 0, last: int | None = None) -> list[SessionEvent]:
        reply = self._read(keys=self._keys(session_id)[1:], args=[after_seq, "" if last is None else last])
        return _events(session_id, reply)

    def version(self, session_id: str) -> int:
        return int(self._client.llen(self._keys(session_id)[1]))

    def delete(self, session_id: str) -> None:
        self._client.delete(*self._keys(session_id))

    def close(self) -> None:
        if self._own:
            self._client.close()


class AsyncRedisSessionRepository:
    """The async face, on ``redis.asyncio``; the same scripts."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.asyncio.Redis | None = None,
        prefix: str = "chatclient:",
        clock: Callable[[], float] = time.time,
    ) -> None:
        require_redis()
        import redis.asyncio

        if client is None and url is None:
            raise ConfigurationError("AsyncRedisSessionRepository needs a url or a client")
        self._client = client if client is not None else redis.asyncio.Redis.from_url(url)  # type: ignore[arg-type]
        self._own = client is None
        self._keys, self._clock = _Keys(prefix), clock
        self._append = self._client.register_script(APPEND)
        self._read = self._client.register_script(READ)

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        keys = self._keys(session_id)
        reply = await self._append(keys=keys, args=_args(events, expected_version, self._clock()))
        return _result(session_id, reply, expected_version)

    async def events(self, session_id: str, *, after_seq: int = 0, last: int | None = None) -> list[SessionEvent]:
        reply = await self._read(keys=self._keys(session_id)[1:], args=[after_seq, "" if last is None else last])
        return _events(session_id, reply)

    async def version(self, session_id: str) -> int:
        return int(await self._client.llen(self._keys(session_id)[1]))

    async def delete(self, session_id: str) -> None:
        await self._client.delete(*self._keys(session_id))

    async def close(self) -> None:
        if self._own:
            await self._client.aclose()
