"""The session log in Redis (``pip install "chatclient[redis]"``: redis-py).

One Lua script appends a batch atomically: it skips event ids already stored (same payload digest),
checks the expected version, and pushes the new events on the session's list; an event's ``seq``
is its place in that list. Keys share the ``{session}`` hash tag, so one session lives on one
Redis Cluster slot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .._storage.redis import async_redis_client, redis_client, require_redis
from ._journal_store import JOURNAL_WRITE, journal_key, parse_redis
from .expiry import Session, check_ttl, session_of, session_to_create
from .log import AppendResult, IdempotencyMismatch, NewEvent, SessionEvent, VersionConflict, check_session_id

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisSessionRepository", "RedisSessionRepository", "require_redis"]

# KEYS: ids hash (event id -> sha1 of payload), log list, marks list (the seqs of events that are not
# messages, e.g. compaction boundaries), pruned (how far the log was pruned), meta (a created
# session's own ttl and metadata), turn journals (renewed with the rest, never read here). ARGV:
# expected version ('' = any), the repository's ttl in ms ('' = none; a session's own ttl comes
# first: renewed on every append that adds events, by the server's clock, so an idle session's keys
# expire together), then per event: id, payload, stored JSON, type.
# Returns {status, version, appended, replayed[, detail]}.
APPEND = """
local version = redis.call('LLEN', KEYS[2])
local fresh, replayed, seen = {}, 0, {}
for i = 3, #ARGV, 4 do
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
  local seq = redis.call('RPUSH', KEYS[2], ARGV[i + 2])
  if ARGV[i + 3] ~= 'message' then redis.call('RPUSH', KEYS[3], seq) end
end
local ttl = redis.call('HGET', KEYS[5], 'px') or ARGV[2]
if #fresh > 0 and ttl ~= '' then
  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
end
return {'ok', version + #fresh, #fresh, replayed}
"""

# KEYS: as APPEND's. ARGV: own ttl in ms ('' = the repository's), metadata JSON, now, the
# repository's ttl in ms. Records a new session's own ttl and metadata (an existing one's are kept)
# and returns them: {created_at, ttl in ms or '', metadata}.
CREATE = """
if redis.call('EXISTS', KEYS[5]) == 0 then
  local first = redis.call('LINDEX', KEYS[2], 0)
  local created = first and tostring(cjson.decode(first)[5]) or ARGV[3]
  redis.call('HSET', KEYS[5], 'created_at', created, 'metadata', ARGV[2])
  if ARGV[1] ~= '' then redis.call('HSET', KEYS[5], 'px', ARGV[1]) end
  local ttl = ARGV[1] ~= '' and ARGV[1] or ARGV[4]
  if ttl ~= '' then
    for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
  end
end
return redis.call('HMGET', KEYS[5], 'created_at', 'px', 'metadata')
"""

# KEYS: as APPEND's. Returns a created session's {created_at, ttl in ms, metadata}, or for one known
# only by its log {its first kept event's created_at, false, false}, or nothing.
GET = """
if redis.call('EXISTS', KEYS[5]) == 1 then return redis.call('HMGET', KEYS[5], 'created_at', 'px', 'metadata') end
local first = redis.call('LINDEX', KEYS[2], tonumber(redis.call('GET', KEYS[4]) or '0'))
if not first then return nil end
return {tostring(cjson.decode(first)[5]), false, false}
"""

PRUNED = '["","","pruned","",0]'
"""What a pruned event's place in the log holds (the list index is the seq, so it stays)."""

# KEYS: ids, log, marks, pruned. ARGV: below_seq, the tombstone. Finds the latest compaction
# boundary among the marks, refuses to prune past its first kept event, and replaces the events
# below with the tombstone (their ids forgotten). Returns {status, count or first kept, boundary seq}.
PRUNE = """
local boundary, first_kept = nil, nil
for i = redis.call('LLEN', KEYS[3]), 1, -1 do
  local s = tonumber(redis.call('LINDEX', KEYS[3], i - 1))
  local item = cjson.decode(redis.call('LINDEX', KEYS[2], s - 1))
  if item[3] == 'compaction' then
    boundary, first_kept = s, tonumber(cjson.decode(item[4])['first_kept_seq'])
    break
  end
end
if not boundary then return {'none', 0, 0} end
local below = tonumber(ARGV[1])
if below > first_kept then return {'past', first_kept, boundary} end
local from = tonumber(redis.call('GET', KEYS[4]) or '0')
local count = 0
for s = from + 1, below - 1 do
  local item = redis.call('LINDEX', KEYS[2], s - 1)
  if item ~= ARGV[2] then
    redis.call('HDEL', KEYS[1], cjson.decode(item)[1])
    redis.call('LSET', KEYS[2], s - 1, ARGV[2])
    count = count + 1
  end
end
if below - 1 > from then
  local ttl = redis.call('PTTL', KEYS[2])
  if ttl > 0 then redis.call('SET', KEYS[4], below - 1, 'PX', ttl) else redis.call('SET', KEYS[4], below - 1) end
end
return {'ok', count, boundary}
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

# KEYS: log list, marks list. ARGV: after_seq, last ('' = all), then the wanted types. Returns
# {seq, item, seq, item, ...} oldest first. Without 'message' among the types only the marked
# events are looked at, newest first, so finding the latest boundary reads back only to it (the
# marks hold every non-message event: each turn's usage too), never the whole log.
READ_TYPED = """
local after, last = tonumber(ARGV[1]), tonumber(ARGV[2])
local wanted, messages = {}, false
for i = 3, #ARGV do wanted[ARGV[i]] = true; if ARGV[i] == 'message' then messages = true end end
local log_len = redis.call('LLEN', KEYS[1])
local marks_len = messages and 0 or redis.call('LLEN', KEYS[2])
local n = messages and log_len or marks_len
local found = {}
for i = n, 1, -1 do
  if last and #found >= 2 * last then break end
  local s = i
  if not messages then s = tonumber(redis.call('LINDEX', KEYS[2], i - 1)) end
  if s <= after then break end
  local item = redis.call('LINDEX', KEYS[1], s - 1)
  if wanted[cjson.decode(item)[3]] then
    table.insert(found, 1, item)
    table.insert(found, 1, s)
  end
end
return found
"""


# KEYS: lease. ARGV: token, ttl in ms. Takes or renews the lease unless another token holds it.
LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

# KEYS: lease. ARGV: token. Deletes the lease only if this token still holds it.
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class _Keys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, session_id: str) -> list[str]:
        """The session's keys, as the scripts take them (the journals last: they expire with the rest)."""
        base = f"{self.prefix}session:{{{check_session_id(session_id)}}}"
        keys = [f"{base}:ids", f"{base}:log", f"{base}:marks", f"{base}:pruned", f"{base}:meta"]
        return [*keys, journal_key(self.prefix, session_id)]

    def lease(self, session_id: str) -> list[str]:
        return [f"{self.prefix}session:{{{check_session_id(session_id)}}}:lease"]

    def journal(self, session_id: str) -> str:
        return journal_key(self.prefix, check_session_id(session_id))


def _ms(ttl: float) -> int:
    return max(1, int(ttl * 1000))


def _args(events: Sequence[NewEvent], expected_version: int | None, now: float, ttl: float | None) -> list[str]:
    args = ["" if expected_version is None else str(expected_version), "" if ttl is None else str(_ms(ttl))]
    for e in events:
        stored = json.dumps([e.event_id, e.turn_id, e.type, e.payload, now])
        args += [e.event_id, e.payload, stored, e.type]
    return args


def _result(session_id: str, reply: list[Any], expected_version: int | None) -> AppendResult:
    status = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
    version = int(reply[1])
    if status == "conflict":
        raise VersionConflict(session_id, expected_version if expected_version is not None else -1, version)
    if status in ("mismatch", "twice"):
        raise IdempotencyMismatch(f"Event {reply[4]!r} of session {session_id!r} clashes with a stored or batched one")
    return AppendResult(version, int(reply[2]), int(reply[3]))


@lru_cache(maxsize=8192)
def _event(session_id: str, seq: int, raw: bytes | str) -> SessionEvent:
    """The event stored as ``raw`` at ``seq``; cached (stored events never change, and a windowed
    view reads the same recent ones every turn)."""
    event_id, turn_id, type_, payload, created_at = json.loads(raw)
    return SessionEvent(session_id, seq, event_id, turn_id, type_, payload, float(created_at))


_TOMBSTONE = PRUNED.encode()


def _events(session_id: str, reply: list[Any]) -> list[SessionEvent]:
    events = enumerate(reply[1:], int(reply[0]))
    return [_event(session_id, seq, raw) for seq, raw in events if raw != _TOMBSTONE]


def _pruned(session_id: str, below_seq: int, reply: list[Any]) -> int:
    """The count from the prune script, or the error :func:`~chatclient.memory.expiry.prune_limit` gives."""
    from .expiry import prune_limit

    status = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
    if status == "ok":
        return int(reply[1])
    boundary: list[SessionEvent] = []
    if status != "none":  # the latest boundary, as far as the check needs it
        payload = json.dumps({"first_kept_seq": int(reply[1])})
        boundary.append(SessionEvent(session_id, int(reply[2]), "", "", "compaction", payload, 0.0))
    prune_limit(session_id, below_seq, boundary)  # raises: past the boundary, or none
    raise AssertionError("unreachable")


def _typed(session_id: str, reply: list[Any]) -> list[SessionEvent]:
    return [_event(session_id, int(reply[i]), reply[i + 1]) for i in range(0, len(reply), 2)]


def _create_args(
    session_id: str | None, ttl: float | None, metadata: Mapping[str, Any] | None, default: float | None, now: float
) -> tuple[str, list[Any]]:
    session_id, ttl, text = session_to_create(session_id, ttl, metadata, default)
    return session_id, ["" if ttl is None else _ms(ttl), text, repr(now), "" if default is None else _ms(default)]


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def _created(session_id: str, reply: list[Any]) -> Session:
    """The session from the ``CREATE``/``GET`` scripts' reply (``px``, ``metadata``: absent for a
    session known only by its log)."""
    created_at, px, metadata = (_text(v) for v in reply)
    return session_of(session_id, float(created_at or 0.0), int(px) / 1000 if px else None, metadata)


def _below(below_seq: int) -> int:
    if isinstance(below_seq, bool) or not isinstance(below_seq, int) or below_seq < 1:
        from .expiry import prune_limit

        prune_limit("", below_seq, [])  # raises the one error for a bad seq
    return below_seq


def _journal_write(
    keys: list[str], turn_id: str, version: int, entry: str, ttl: float | None
) -> tuple[list[str], list[Any]]:
    """``JOURNAL_WRITE``'s keys (the journals, the log, the meta) and arguments."""
    return [keys[5], keys[1], keys[4]], [turn_id, version, entry, "" if ttl is None else _ms(ttl)]


def _read_args(after_seq: int, last: int | None, types: Sequence[str] | None) -> list[Any]:
    return [after_seq, "" if last is None else last, *(types or ())]


class RedisSessionRepository:
    """Sessions in Redis at ``url`` (or on ``client``); keys start with ``prefix``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        client: redis.Redis | None = None,
        prefix: str = "chatclient:",
        clock: Callable[[], float] = time.time,
        ttl: float | None = None,
    ) -> None:
        self.ttl = check_ttl(ttl)
        self._client = redis_client(url, client, type(self).__name__)
        self._own = client is None
        self._keys, self._clock = _Keys(prefix), clock
        self._append = self._client.register_script(APPEND)
        self._read = self._client.register_script(READ)
        self._read_typed = self._client.register_script(READ_TYPED)
        self._lease = self._client.register_script(LEASE)
        self._release = self._client.register_script(RELEASE)
        self._prune = self._client.register_script(PRUNE)
        self._create = self._client.register_script(CREATE)
        self._get = self._client.register_script(GET)
        self._journal_write = self._client.register_script(JOURNAL_WRITE)

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        keys = self._keys(session_id)
        reply = self._append(keys=keys, args=_args(events, expected_version, self._clock(), self.ttl))
        return _result(session_id, reply, expected_version)

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        keys, args = self._keys(session_id)[1:], _read_args(after_seq, last, types)
        if types is not None:
            return _typed(session_id, self._read_typed(keys=keys, args=args)) if types else []
        return _events(session_id, self._read(keys=keys, args=args))

    def version(self, session_id: str) -> int:
        return int(self._client.llen(self._keys(session_id)[1]))

    def delete(self, session_id: str) -> None:
        self._client.delete(*self._keys(session_id))

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        return bool(self._lease(keys=self._keys.lease(session_id), args=[token, _ms(ttl)]))

    def release_lease(self, session_id: str, token: str) -> bool:
        return bool(self._release(keys=self._keys.lease(session_id), args=[token]))

    def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        return parse_redis(self._client.hgetall(self._keys.journal(session_id)))

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        keys, args = _journal_write(self._keys(session_id), turn_id, version, entry, self.ttl)
        return bool(self._journal_write(keys=keys, args=args))

    def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        self._client.hdel(self._keys.journal(session_id), turn_id)

    def delete_expired(self, now: float | None = None) -> int:
        """Nothing to do: the server expires an idle session's keys itself (``ttl``)."""
        return 0

    def prune(self, session_id: str, below_seq: int) -> int:
        reply = self._prune(keys=self._keys(session_id), args=[_below(below_seq), PRUNED])
        return _pruned(session_id, below_seq, reply)

    def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, args = _create_args(session_id, ttl, metadata, self.ttl, self._clock())
        return _created(session_id, self._create(keys=self._keys(session_id), args=args))

    def get(self, session_id: str) -> Session | None:
        reply = self._get(keys=self._keys(session_id))
        return None if reply is None else _created(session_id, reply)

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
        ttl: float | None = None,
    ) -> None:
        self.ttl = check_ttl(ttl)
        self._client = async_redis_client(url, client, type(self).__name__)
        self._own = client is None
        self._keys, self._clock = _Keys(prefix), clock
        self._append = self._client.register_script(APPEND)
        self._read = self._client.register_script(READ)
        self._read_typed = self._client.register_script(READ_TYPED)
        self._lease = self._client.register_script(LEASE)
        self._release = self._client.register_script(RELEASE)
        self._prune = self._client.register_script(PRUNE)
        self._create = self._client.register_script(CREATE)
        self._get = self._client.register_script(GET)
        self._journal_write = self._client.register_script(JOURNAL_WRITE)

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        keys = self._keys(session_id)
        reply = await self._append(keys=keys, args=_args(events, expected_version, self._clock(), self.ttl))
        return _result(session_id, reply, expected_version)

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        keys, args = self._keys(session_id)[1:], _read_args(after_seq, last, types)
        if types is not None:
            return _typed(session_id, await self._read_typed(keys=keys, args=args)) if types else []
        return _events(session_id, await self._read(keys=keys, args=args))

    async def version(self, session_id: str) -> int:
        return int(await self._client.llen(self._keys(session_id)[1]))

    async def delete(self, session_id: str) -> None:
        await self._client.delete(*self._keys(session_id))

    async def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        return bool(await self._lease(keys=self._keys.lease(session_id), args=[token, _ms(ttl)]))

    async def release_lease(self, session_id: str, token: str) -> bool:
        return bool(await self._release(keys=self._keys.lease(session_id), args=[token]))

    async def turn_journals(self, session_id: str) -> list[tuple[str, int, str]]:
        return parse_redis(await self._client.hgetall(self._keys.journal(session_id)))

    async def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        keys, args = _journal_write(self._keys(session_id), turn_id, version, entry, self.ttl)
        return bool(await self._journal_write(keys=keys, args=args))

    async def clear_turn_journal(self, session_id: str, turn_id: str) -> None:
        await self._client.hdel(self._keys.journal(session_id), turn_id)

    async def delete_expired(self, now: float | None = None) -> int:
        return 0

    async def prune(self, session_id: str, below_seq: int) -> int:
        reply = await self._prune(keys=self._keys(session_id), args=[_below(below_seq), PRUNED])
        return _pruned(session_id, below_seq, reply)

    async def create(
        self, session_id: str | None = None, *, ttl: float | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Session:
        session_id, args = _create_args(session_id, ttl, metadata, self.ttl, self._clock())
        return _created(session_id, await self._create(keys=self._keys(session_id), args=args))

    async def get(self, session_id: str) -> Session | None:
        reply = await self._get(keys=self._keys(session_id))
        return None if reply is None else _created(session_id, reply)

    async def close(self) -> None:
        if self._own:
            await self._client.aclose()
