"""The SQL of the session log, written once for SQLite and PostgreSQL and for sync and async.

Each operation is a generator *flow*: it yields ``(sql, params)`` and receives the rows, so the
same logic runs on a ``sqlite3`` connection, a psycopg connection or a psycopg async connection;
the backend only supplies the transaction and the driver call (:mod:`chatclient._storage.sql`).
SQL is written with ``?`` placeholders; PostgreSQL's dialect turns them into ``%s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._storage.postgres import schema_lock
from .._storage.sql import Flow, Rows, Statement, check_prefix
from ..errors import ConfigurationError
from ._journal_store import JournalSql
from .log import AppendResult, NewEvent, SessionEvent, plan_append


@dataclass(frozen=True, slots=True)
class Dialect:
    postgres: bool

    def sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text


SQLITE = Dialect(postgres=False)
POSTGRES = Dialect(postgres=True)

SQLITE_SCHEMA = 2
"""The shape of the SQLite tables this code writes (1: before it was recorded)."""
_MARKS = "type <> 'message'"
_SQLITE_MARKS = "type <> 'message' AND type <> 'usage'"


class SessionSql:
    """The statements for tables ``{prefix}session`` and ``{prefix}session_event``."""

    def __init__(self, prefix: str, dialect: Dialect) -> None:
        self.dialect = dialect
        p = check_prefix(prefix)
        self.session, self.event, self.lease = f"{p}session", f"{p}session_event", f"{p}session_lease"
        self.schema_table = f"{p}session_schema"
        self.journal = JournalSql(p, dialect.postgres)  # turn journals: beside the log, never in it
        self._new_turn_sql: dict[int, str] = {}
        self._cols = "seq, event_id, turn_id, type, payload, created_at"

    def schema(self) -> Flow[None]:
        """Create the tables (the one place their DDL lives). SQLite's shape is recorded in
        ``{prefix}session_schema`` and a file made by older code is brought to it in place, in the
        write transaction this runs in (:meth:`_migrate_sqlite`)."""
        postgres = self.dialect.postgres
        if postgres:  # concurrent CREATE IF NOT EXISTS can collide in PostgreSQL's catalog
            yield schema_lock(self.session)
        else:
            yield from self._migrate_sqlite()
        # SQLite: the version is the last seq (read from the events' primary key in the write
        # transaction), so the session row is written once, when the session is new.
        version = " version BIGINT NOT NULL," if postgres else ""
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.session} (id TEXT PRIMARY KEY,{version}"
            " created_at DOUBLE PRECISION NOT NULL)",
            (),
        )
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.event} (session_id TEXT NOT NULL"
            f" REFERENCES {self.session}(id) ON DELETE CASCADE, seq BIGINT NOT NULL, event_id TEXT NOT NULL,"
            " turn_id TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,"
            " created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session_id, seq), UNIQUE (session_id, event_id))",
            (),
        )
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.lease} (session_id TEXT PRIMARY KEY, token TEXT NOT NULL,"
            " expires_at DOUBLE PRECISION NOT NULL)",
            (),
        )
        # Finding the latest compaction boundary without scanning the log; partial, so appending
        # messages (nearly every event) never touches it; in SQLite a turn's usage event neither
        # (one index page less in each turn's commit; usage is read with the whole log).
        yield (
            f"CREATE INDEX IF NOT EXISTS {self.event}_marks ON {self.event} (session_id, type, seq)"
            f" WHERE {_MARKS if postgres else _SQLITE_MARKS}",
            (),
        )
        if not postgres:
            yield (
                f"INSERT INTO {self.schema_table} (version) SELECT ? WHERE NOT EXISTS"
                f" (SELECT 1 FROM {self.schema_table})",
                (SQLITE_SCHEMA,),
            )

    def _migrate_sqlite(self) -> Flow[None]:
        """Bring this prefix's tables to :data:`SQLITE_SCHEMA`: idempotent, under the write lock.
        Schema 1 (no record; the session row kept a version column and the marks index held usage
        events) is rebuilt in place; a newer schema than this code knows is refused, unchanged."""
        yield (f"CREATE TABLE IF NOT EXISTS {self.schema_table} (version INTEGER NOT NULL)", ())
        rows = yield (f"SELECT version FROM {self.schema_table}", ())
        if rows:
            found = int(rows[0][0])
            if found > SQLITE_SCHEMA:
                raise ConfigurationError(
                    f"The tables {self.session}* were written by a newer chatclient (schema {found}; this one"
                    f" knows {SQLITE_SCHEMA}): upgrade chatclient, or use another file or prefix"
                )
            return
        columns = yield (f"SELECT name FROM pragma_table_info('{self.session}')", ())
        if "version" not in {str(c[0]) for c in columns}:
            return  # a new file (or one with no session table yet): the DDL below makes schema 2
        yield (f"CREATE TABLE {self.session}_v2 (id TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL)", ())
        yield (f"INSERT INTO {self.session}_v2 (id, created_at) SELECT id, created_at FROM {self.session}", ())
        yield (f"DROP TABLE {self.session}", ())
        yield (f"ALTER TABLE {self.session}_v2 RENAME TO {self.session}", ())
        yield (f"DROP INDEX IF EXISTS {self.event}_marks", ())  # re-created below without usage events

    def _q(self, text: str, *params: Any) -> Statement:
        return (self.dialect.sql(text), params)

    def append(
        self, session_id: str, events: Sequence[NewEvent], expected_version: int | None, now: float
    ) -> Flow[AppendResult]:
        result, _ = yield from self.append_to_session(session_id, events, expected_version, now)
        return result

    def append_to_session(
        self, session_id: str, events: Sequence[NewEvent], expected_version: int | None, now: float
    ) -> Flow[tuple[AppendResult, float]]:
        """:meth:`append`, also giving the session's creation time (a cached tail checks it)."""
        n = len(events)
        # One statement creates the session if absent, moves its version past the batch (the common
        # case: a new turn) and returns it; the update locks the row in PostgreSQL (SQLite: BEGIN
        # IMMEDIATE already holds the write lock). Anything else sets the version back below, and a
        # refusal (VersionConflict, IdempotencyMismatch) rolls the whole transaction back.
        rows = yield self._q(
            f"INSERT INTO {self.session} (id, version, created_at) VALUES (?, ?, ?) ON CONFLICT (id)"
            f" DO UPDATE SET version = {self.session}.version + ? RETURNING version, created_at",
            session_id,
            n,
            now,
            n,
        )
        current, created_at = int(rows[0][0]) - n, float(rows[0][1])
        if events and (expected_version is None or expected_version == current):
            # Insert the new turn straight away; if any id was already stored (a replay), undo that
            # insert in this same transaction and take the careful path.
            plan_append(session_id, events, {}, current, None)  # refuses an id twice in the batch
            inserted = yield self._insert(session_id, events, current, now, skip_known=True)
            if len(inserted) == n:
                return AppendResult(current + n, n, 0), created_at
            if inserted:
                yield self._q(f"DELETE FROM {self.event} WHERE session_id = ? AND seq > ?", session_id, current)
        known: dict[str, str] = {}
        if events:
            marks = ", ".join("?" * n)
            rows = yield self._q(
                f"SELECT event_id, payload FROM {self.event} WHERE session_id = ? AND event_id IN ({marks})",
                session_id,
                *(e.event_id for e in events),
            )
            known = {str(r[0]): str(r[1]) for r in rows}
        fresh = plan_append(session_id, events, known, current, expected_version)
        if fresh:
            yield self._insert(session_id, fresh, current, now, skip_known=False)
        if len(fresh) != n:
            yield self._bump(session_id, current + len(fresh))
        return AppendResult(current + len(fresh), len(fresh), n - len(fresh)), created_at

    def new_turn(
        self, session_id: str, events: Sequence[NewEvent], base: int, now: float, created_at: float
    ) -> Statement:
        """SQLite: a new turn on a session this process knows, as one statement (atomic by itself,
        so it runs without ``BEGIN``/``COMMIT``): the events numbered from ``base + 1``, ``base``
        being the log's last seq as this process last saw it, inserted only while the session row
        is the one created at ``created_at``.

        Nothing is read from the events table, so SQLite runs it straight into the table: reading
        the table the rows go to (its last seq, say) makes it buffer the rows in a temporary table
        first, and ``RETURNING`` a second one. The log's primary key checks ``base`` instead: if
        anyone appended after it, ``base + 1`` is taken and the statement fails whole on the unique
        violation, as it does on an id already stored (a replay); it inserts nothing when the session
        row differs. Either way the caller takes :meth:`append_sqlite`. Stored seqs never move
        down while the session row stays the same (events are only appended; a prune keeps the
        newest), so a ``base`` this process saw is never past the log's end. The caller has
        refused an id twice in the batch."""
        params: list[Any] = [session_id, base, now]
        for event_id, turn_id, payload, kind in events:  # NewEvent's fields, in order
            params += (event_id, turn_id, kind, payload)
        params += (session_id, created_at)
        n = len(events)
        sql = self._new_turn_sql.get(n)
        if sql is None:  # the same text each time: built once per batch size
            values = ", ".join([f"({k}, ?, ?, ?, ?)" for k in range(1, n + 1)])
            sql = self._new_turn_sql[n] = (
                f"INSERT INTO {self.event} (session_id, {self._cols}) SELECT ?, ? + v.column1, v.column2,"
                f" v.column3, v.column4, v.column5, ? FROM (VALUES {values}) AS v"
                f" WHERE EXISTS (SELECT 1 FROM {self.session} WHERE id = ? AND created_at = ?)"
            )
        return sql, tuple(params)

    def append_sqlite(
        self, session_id: str, events: Sequence[NewEvent], expected_version: int | None, now: float
    ) -> Flow[tuple[AppendResult, float]]:
        """SQLite, in a ``BEGIN IMMEDIATE`` transaction: :meth:`append_to_session` without a
        session-row write per turn (the version is the last seq): the session row is created if
        absent, replays are recognised, and the version is checked. Gives the session's creation
        time too (a cached tail, and :meth:`new_turn` next time, check it)."""
        n = len(events)
        yield (
            f"INSERT INTO {self.session} (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
            (session_id, now),
        )
        rows = yield (
            f"SELECT created_at, (SELECT coalesce(max(seq), 0) FROM {self.event} WHERE session_id = ?)"
            f" FROM {self.session} WHERE id = ?",
            (session_id, session_id),
        )
        created, current = float(rows[0][0]), int(rows[0][1])
        known: dict[str, str] = {}
        if events:
            marks = ", ".join("?" * n)
            rows = yield (
                f"SELECT event_id, payload FROM {self.event} WHERE session_id = ? AND event_id IN ({marks})",
                (session_id, *(e.event_id for e in events)),
            )
            known = {str(r[0]): str(r[1]) for r in rows}
        fresh = plan_append(session_id, events, known, current, expected_version)
        if fresh:
            yield self._insert(session_id, fresh, current, now, skip_known=False)
        return AppendResult(current + len(fresh), len(fresh), n - len(fresh)), created

    def append_new(self, session_id: str, events: Sequence[NewEvent], now: float) -> Flow[AppendResult]:
        """PostgreSQL, ``expected_version=None``: a batch of new events in one statement (one round
        trip, atomic by itself): the session row is created or locked and its version moved past the
        batch, and the events are numbered from the version before. Any id already stored makes the
        whole statement fail with a unique violation, nothing written; the caller then appends
        through :meth:`append` (replays, mismatches)."""
        n = len(events)
        plan_append(session_id, events, {}, 0, None)  # refuses an id twice in the batch
        rows_sql = ", ".join([f"({k}, ?, ?, ?, ?)" for k in range(1, n + 1)])
        params: list[Any] = [session_id, n, now, n, n, session_id, now]
        for e in events:
            params += [e.event_id, e.turn_id, e.type, e.payload]
        rows = yield self._q(
            f"WITH s AS (INSERT INTO {self.session} (id, version, created_at) VALUES (?, ?, ?) ON CONFLICT (id)"
            f" DO UPDATE SET version = {self.session}.version + ? RETURNING version - ? AS base)"
            f" INSERT INTO {self.event} (session_id, {self._cols}) SELECT ?, s.base + v.n, v.event_id, v.turn_id,"
            f" v.type, v.payload, ? FROM s, (VALUES {rows_sql}) AS v (n, event_id, turn_id, type, payload)"
            " RETURNING seq",
            *params,
        )
        version = max(int(r[0]) for r in rows)
        return AppendResult(version, n, 0)

    def _insert(
        self, session_id: str, events: Sequence[NewEvent], current: int, now: float, *, skip_known: bool
    ) -> Statement:
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(events))
        params: list[Any] = []
        for seq, e in enumerate(events, current + 1):
            params += [session_id, seq, e.event_id, e.turn_id, e.type, e.payload, now]
        tail = " ON CONFLICT (session_id, event_id) DO NOTHING RETURNING event_id" if skip_known else ""
        return self._q(f"INSERT INTO {self.event} (session_id, {self._cols}) VALUES {values}{tail}", *params)

    def _bump(self, session_id: str, version: int) -> Statement:
        return self._q(f"UPDATE {self.session} SET version = ? WHERE id = ?", version, session_id)

    def events(
        self, session_id: str, after_seq: int, last: int | None, types: Sequence[str] | None = None
    ) -> Flow[list[SessionEvent]]:
        where = f"FROM {self.event} WHERE session_id = ? AND seq > ?"
        params: tuple[Any, ...] = (session_id, after_seq)
        if types is not None:
            if not types:
                return []
            where += f" AND type IN ({', '.join('?' * len(types))})"
            params += tuple(types)
            if "message" not in types:  # lets the partial index serve the read (its own WHERE terms)
                marks = _SQLITE_MARKS if not self.dialect.postgres and "usage" not in types else _MARKS
                where += f" AND {marks}"
        if last is None:
            rows = yield self._q(f"SELECT {self._cols} {where} ORDER BY seq", *params)
        else:
            rows = yield self._q(f"SELECT {self._cols} {where} ORDER BY seq DESC LIMIT ?", *params, last)
            rows.reverse()
        return self._event_rows(session_id, rows)

    def _event_rows(self, session_id: str, rows: Rows) -> list[SessionEvent]:
        return [SessionEvent(session_id, int(r[0]), r[1], r[2], r[3], r[4], float(r[5])) for r in rows]

    def tail(self, session_id: str, after_seq: int) -> Flow[tuple[float | None, list[SessionEvent]]]:
        """The session's creation time and its events after ``after_seq``, in one statement (a
        cached tail is extended with them when the session is still the one it was)."""
        cols = ", ".join(f"e.{c.strip()}" for c in self._cols.split(","))
        rows = yield self._q(
            f"SELECT s.created_at, {cols} FROM {self.session} s LEFT JOIN {self.event} e"
            " ON e.session_id = s.id AND e.seq > ? WHERE s.id = ? ORDER BY e.seq",
            after_seq,
            session_id,
        )
        if not rows:
            return None, []
        return float(rows[0][0]), self._event_rows(session_id, [r[1:] for r in rows if r[1] is not None])

    def events_of_session(
        self, session_id: str, after_seq: int, last: int | None
    ) -> Flow[tuple[float | None, list[SessionEvent]]]:
        """``events`` with the session's creation time (``None``: no such session)."""
        rows = yield self._q(f"SELECT created_at FROM {self.session} WHERE id = ?", session_id)
        events = yield from self.events(session_id, after_seq, last)
        return (float(rows[0][0]) if rows else None), events

    def try_lease(self, session_id: str, token: str, ttl: float, now: float) -> Flow[bool]:
        """Take or renew the lease row unless another token holds it unexpired (PostgreSQL: by
        the server's clock; SQLite: by the repository's)."""
        clock, before = self._lease_clock(now)
        rows = yield self._q(
            f"INSERT INTO {self.lease} (session_id, token, expires_at) VALUES (?, ?, {clock} + ?)"
            " ON CONFLICT (session_id) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at"
            f" WHERE {self.lease}.token = excluded.token OR {self.lease}.expires_at <= {clock} RETURNING token",
            session_id,
            token,
            *before,
            ttl,
            *before,
        )
        return bool(rows)

    def _lease_clock(self, now: float | None) -> tuple[str, tuple[Any, ...]]:
        """The clock leases expire by: PostgreSQL's (every holder's server agrees), else ``now``."""
        return ("EXTRACT(EPOCH FROM clock_timestamp())", ()) if self.dialect.postgres else ("?", (now,))

    def release_lease(self, session_id: str, token: str) -> Flow[bool]:
        rows = yield self._q(
            f"DELETE FROM {self.lease} WHERE session_id = ? AND token = ? RETURNING token", session_id, token
        )
        return bool(rows)

    def version(self, session_id: str) -> Flow[int]:
        if not self.dialect.postgres:  # the last seq, from the primary key
            rows = yield self._q(f"SELECT coalesce(max(seq), 0) FROM {self.event} WHERE session_id = ?", session_id)
            return int(rows[0][0])
        rows = yield self._q(f"SELECT version FROM {self.session} WHERE id = ?", session_id)
        return int(rows[0][0]) if rows else 0

    def delete(self, session_id: str) -> Flow[None]:
        yield self._q(f"DELETE FROM {self.event} WHERE session_id = ?", session_id)
        yield self._q(f"DELETE FROM {self.session} WHERE id = ?", session_id)

    # ------------------------------------------------------------------ expiry and pruning
    # (new statements only: the append, read and schema statements above are unchanged). The last
    # activity is the ``created_at`` of the session's newest event, reached by its (session, seq)
    # key, so a turn writes nothing more for expiry. PostgreSQL compares with the server's clock.

    def _clock(self, now: float | None) -> tuple[str, tuple[Any, ...]]:
        if self.dialect.postgres and now is None:
            return "EXTRACT(EPOCH FROM now())", ()
        return "?", (now,)

    @property
    def meta(self) -> str:
        return f"{self.session}_meta"

    def meta_schema(self) -> Flow[None]:
        """The table of created sessions' own ttl and metadata (a session row may have none)."""
        if self.dialect.postgres:
            yield ("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.meta,))
        yield (
            f"CREATE TABLE IF NOT EXISTS {self.meta} (id TEXT PRIMARY KEY, ttl DOUBLE PRECISION,"
            " metadata TEXT NOT NULL)",
            (),
        )

    def all_schema(self) -> Flow[None]:
        """:meth:`schema`, :meth:`meta_schema` and the turn journals' table, in one transaction."""
        yield from self.schema()
        yield from self.meta_schema()
        yield from self.journal.schema()

    def _from_last(self) -> str:
        """A session row ``s``, its newest event ``e`` (by the (session, seq) key) and its own ttl ``m``."""
        last = (
            "s.version"
            if self.dialect.postgres  # SQLite keeps no version on the session row: the last seq is the version
            else f"(SELECT max(seq) FROM {self.event} WHERE session_id = s.id)"
        )
        return (
            f"{self.session} s LEFT JOIN {self.event} e ON e.session_id = s.id AND e.seq = {last}"
            f" LEFT JOIN {self.meta} m ON m.id = s.id"
        )

    def _idle(self, ttl: float | None, now: float | None) -> tuple[str, tuple[Any, ...]]:
        """The condition (on :meth:`_from_last`) of an expired session: its own ttl, else ``ttl``."""
        clock, at = self._clock(now)
        return f"COALESCE(e.created_at, s.created_at) + COALESCE(m.ttl, ?) <= {clock}", (ttl, *at)

    def delete_session(self, session_id: str) -> Flow[None]:
        """:meth:`delete`, the session's own ttl and metadata and its turn journals too."""
        yield from self.delete(session_id)
        yield self._q(f"DELETE FROM {self.meta} WHERE id = ?", session_id)
        yield self._q(f"DELETE FROM {self.journal.table} WHERE session_id = ?", session_id)

    def create(
        self, session_id: str, ttl: float | None, metadata: str, now: float, default_ttl: float | None
    ) -> Flow[tuple[float, float | None, str | None]]:
        """Create the session row and its ttl/metadata unless they exist (an expired session is
        deleted first); its creation time, own ttl and metadata."""
        if default_ttl is not None:
            reset = yield from self.expired(session_id, default_ttl, None if self.dialect.postgres else now, lock=True)
            if reset:
                yield from self.delete_session(session_id)
        version = ("version, ", "0, ") if self.dialect.postgres else ("", "")
        yield self._q(
            f"INSERT INTO {self.session} (id, {version[0]}created_at) VALUES (?, {version[1]}?)"
            " ON CONFLICT (id) DO NOTHING",
            session_id,
            now,
        )
        yield self._q(
            f"INSERT INTO {self.meta} (id, ttl, metadata) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
            session_id,
            ttl,
            metadata,
        )
        found = yield from self.get(session_id, default_ttl, now, judge=False)
        assert found is not None  # just written, in this transaction
        return found

    def get(
        self, session_id: str, default_ttl: float | None, now: float | None, *, judge: bool = True
    ) -> Flow[tuple[float, float | None, str | None] | None]:
        """The session's creation time, own ttl and metadata; ``None``: unknown or expired (unless
        not ``judge``: a session just created by a clock the server's disagrees with)."""
        idle, params = self._idle(default_ttl, now) if judge else ("FALSE", ())
        rows = yield self._q(
            f"SELECT s.created_at, m.ttl, m.metadata, {idle} FROM {self._from_last()} WHERE s.id = ?",
            *params,
            session_id,
        )
        if not rows or rows[0][3]:
            return None
        created_at, ttl, metadata = rows[0][:3]
        return float(created_at), (None if ttl is None else float(ttl)), metadata

    def expired(self, session_id: str, ttl: float | None, now: float | None, *, lock: bool = False) -> Flow[bool]:
        """Whether the session exists and has expired (``lock``: PostgreSQL locks its row, so an
        append that then starts it afresh cannot race another)."""
        idle, params = self._idle(ttl, now)
        tail = " FOR UPDATE OF s" if lock and self.dialect.postgres else ""
        rows = yield self._q(f"SELECT {idle} FROM {self._from_last()} WHERE s.id = ?{tail}", *params, session_id)
        return bool(rows and rows[0][0])

    def append_expiring(
        self, session_id: str, events: Sequence[NewEvent], expected_version: int | None, now: float, ttl: float
    ) -> Flow[tuple[AppendResult, float, bool]]:
        """:meth:`append_to_session` on a session that may have expired: an expired log is deleted
        first (in the same transaction), so the turn starts a fresh one. Also says if it did."""
        at = None if self.dialect.postgres else now
        reset = yield from self.expired(session_id, ttl, at, lock=True)
        if reset:
            yield from self.delete_session(session_id)
        append = self.append_to_session if self.dialect.postgres else self.append_sqlite
        result, created_at = yield from append(session_id, events, expected_version, now)
        return result, created_at, reset

    def delete_expired(self, ttl: float | None, now: float | None) -> Flow[list[str]]:
        """Delete every expired session with its events (none without a ``ttl``: no session of such a
        repository expires), and every expired lease; the sessions' ids."""
        gone: list[str] = []
        if ttl is not None:
            idle, params = self._idle(ttl, now)
            tail = " FOR UPDATE OF s" if self.dialect.postgres else ""
            rows = yield self._q(f"SELECT s.id FROM {self._from_last()} WHERE {idle}{tail}", *params)
            gone = [str(r[0]) for r in rows]
        for start in range(0, len(gone), 500):
            chunk = gone[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            yield self._q(f"DELETE FROM {self.event} WHERE session_id IN ({marks})", *chunk)
            yield self._q(f"DELETE FROM {self.session} WHERE id IN ({marks})", *chunk)
            yield self._q(f"DELETE FROM {self.meta} WHERE id IN ({marks})", *chunk)
            yield self._q(f"DELETE FROM {self.journal.table} WHERE session_id IN ({marks})", *chunk)
        clock, at = self._lease_clock(now)  # leases a crashed holder never released, on any session
        yield self._q(f"DELETE FROM {self.lease} WHERE expires_at <= {clock}", *at)
        return gone

    def journals(self, session_id: str, ttl: float | None, now: float | None) -> Flow[list[tuple[str, int, str]]]:
        """The session's turn journals; none once it has expired (they go with it)."""
        if ttl is not None and (yield from self.expired(session_id, ttl, now)):
            return []
        found: list[tuple[str, int, str]] = yield from self.journal.list(session_id)
        return found

    def write_journal(
        self, session_id: str, turn_id: str, version: int, entry: str, ttl: float | None, now: float | None
    ) -> Flow[tuple[bool, bool]]:
        """A journal write (``JournalSql.write``) that first deletes an expired session with its old
        journals, as an append does: the new turn's journal is not hidden by the old session. Whether
        it landed, and whether the session was deleted."""
        reset = ttl is not None and (yield from self.expired(session_id, ttl, now, lock=True))
        if reset:
            yield from self.delete_session(session_id)
        landed = yield from self.journal.write(session_id, turn_id, version, entry)
        return landed, reset

    def prune(self, session_id: str, below_seq: int, ttl: float | None = None, now: float | None = None) -> Flow[int]:
        """Delete the events below ``below_seq``, checked against the latest boundary first (an
        expired session has none: it reads as empty)."""
        from .expiry import prune_limit

        gone = ttl is not None and (yield from self.expired(session_id, ttl, now))
        boundaries = [] if gone else (yield from self.events(session_id, 0, 1, ("compaction",)))
        limit = prune_limit(session_id, below_seq, boundaries)
        rows = yield self._q(
            f"DELETE FROM {self.event} WHERE session_id = ? AND seq < ? RETURNING seq", session_id, limit
        )
        return len(rows)
