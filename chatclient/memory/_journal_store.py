"""Where a memory-backed conversation's turn journals live, per backend: beside the session log, never
in it (events in the log would count against the window and move ``concurrency="raise"``'s version).

One row (SQL), hash field (Redis) or dict entry per ``(conversation, turn)``: ``(version, entry)``.
A write is a compare-and-set: it lands when the stored version is the one the writer last saw (``0``:
no journal yet) and makes it one higher; a write resent after its reply was lost is recognised as
landed (the same text at the next version: every writer's text carries its own random token).
"""

from __future__ import annotations

import threading

from .._storage.sql import Flow, Statement, check_prefix

__all__ = ["JOURNAL_WRITE", "InMemoryTurnJournals", "JournalSql", "journal_key", "parse_redis"]

Journals = list[tuple[str, int, str]]
"""A conversation's journals: ``(turn id, version, entry)``."""


class InMemoryTurnJournals:
    """The in-memory backend's journals (thread-safe)."""

    def __init__(self) -> None:
        self._journals: dict[tuple[str, str], tuple[int, str]] = {}
        self._lock = threading.Lock()

    def list(self, session_id: str) -> Journals:
        with self._lock:
            return [(t, v, e) for (s, t), (v, e) in self._journals.items() if s == session_id]

    def write(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        key = (session_id, turn_id)
        with self._lock:
            now, text = self._journals.get(key, (0, ""))
            if now == version + 1 and text == entry:
                return True
            if now != version:
                return False
            self._journals[key] = (version + 1, entry)
            return True

    def clear(self, session_id: str, turn_id: str) -> None:
        with self._lock:
            self._journals.pop((session_id, turn_id), None)

    def forget(self, session_id: str) -> None:
        """Every journal of a deleted session."""
        with self._lock:
            for key in [k for k in self._journals if k[0] == session_id]:
                del self._journals[key]


class JournalSql:
    """The statements of table ``{prefix}session_turn_journal`` (SQLite and PostgreSQL)."""

    def __init__(self, prefix: str, postgres: bool) -> None:
        self.table = f"{check_prefix(prefix)}session_turn_journal"
        self._postgres = postgres

    def _q(self, text: str, *params: object) -> Statement:
        return (text.replace("?", "%s") if self._postgres else text, params)

    def schema(self) -> Flow[None]:
        if self._postgres:  # concurrent CREATE IF NOT EXISTS can collide in PostgreSQL's catalog
            yield ("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.table} (session_id TEXT NOT NULL, turn_id TEXT NOT NULL,"
            " version BIGINT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session_id, turn_id))",
            (),
        )

    def list(self, session_id: str) -> Flow[Journals]:
        rows = yield self._q(
            f"SELECT turn_id, version, entry FROM {self.table} WHERE session_id = ? ORDER BY turn_id", session_id
        )
        return [(str(t), int(v), str(e)) for t, v, e in rows]

    def write(self, session_id: str, turn_id: str, version: int, entry: str) -> Flow[bool]:
        if version == 0:
            rows = yield self._q(
                f"INSERT INTO {self.table} (session_id, turn_id, version, entry) VALUES (?, ?, 1, ?)"
                " ON CONFLICT (session_id, turn_id) DO NOTHING RETURNING version",
                session_id,
                turn_id,
                entry,
            )
        else:
            rows = yield self._q(
                f"UPDATE {self.table} SET version = version + 1, entry = ?"
                " WHERE session_id = ? AND turn_id = ? AND version = ? RETURNING version",
                entry,
                session_id,
                turn_id,
                version,
            )
        if rows:
            return True
        resent = yield self._q(  # this very write, landed before its reply was lost
            f"SELECT 1 FROM {self.table} WHERE session_id = ? AND turn_id = ? AND version = ? AND entry = ?",
            session_id,
            turn_id,
            version + 1,
            entry,
        )
        return bool(resent)

    def clear(self, session_id: str, turn_id: str) -> Flow[None]:
        yield self._q(f"DELETE FROM {self.table} WHERE session_id = ? AND turn_id = ?", session_id, turn_id)


def journal_key(prefix: str, session_id: str) -> str:
    """The Redis hash of a conversation's journals (field: turn id; value ``"<version>\\n<entry>"``),
    in the session's hash slot."""
    return f"{prefix}session:{{{session_id}}}:turn-journal"


# KEYS: the hash, the session's log list, its meta hash. ARGV: turn id, the version the writer saw,
# the entry, the repository's ttl in ms ('' = none). 1: landed (or landed before). The hash expires
# with the session's keys (their remaining time; a session with none yet: its own ttl, else the
# repository's), and every append renews all of them together.
JOURNAL_WRITE = """
local now = redis.call('HGET', KEYS[1], ARGV[1])
local version, entry = 0, ''
if now then
  local cut = string.find(now, '\\n', 1, true)
  version, entry = tonumber(string.sub(now, 1, cut - 1)), string.sub(now, cut + 1)
end
local seen = tonumber(ARGV[2])
if version == seen + 1 and entry == ARGV[3] then return 1 end
if version ~= seen then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], (seen + 1) .. '\\n' .. ARGV[3])
local left = redis.call('PTTL', KEYS[2])
if left < 0 then left = redis.call('PTTL', KEYS[3]) end
if left > 0 then
  redis.call('PEXPIRE', KEYS[1], left)
else
  local ttl = redis.call('HGET', KEYS[3], 'px') or ARGV[4]
  if ttl ~= '' then redis.call('PEXPIRE', KEYS[1], ttl) end
end
return 1
"""


def parse_redis(raw: dict[bytes | str, bytes | str]) -> Journals:
    """``HGETALL``'s answer as journals, ordered by turn id."""
    found: Journals = []
    for field, value in raw.items():
        turn = field.decode() if isinstance(field, bytes) else field
        text = value.decode() if isinstance(value, bytes) else value
        version, _, entry = text.partition("\n")
        found.append((turn, int(version), entry))
    return sorted(found)
