"""Keeping paused tool calls safe between the pause and the resume.

- :class:`PendingToolCallStore`: save a :class:`PendingToolCalls` under a random id and take it back
  exactly once (atomic), before it expires; ``peek`` reads it without taking it, so a resume can
  check the decisions (and who made them) before it takes the state
  (``spec.resume_from(store, state_id, decisions)``). :class:`InMemoryPendingToolCallStore` for one
  process, :class:`SqlitePendingToolCallStore` for several processes or a restart; implement the
  protocol for other stores. Every store also has ``discard(state_id) -> bool`` (drop a state nobody
  will resume) and ``purge_expired() -> int`` (remove the expired states now; the number removed,
  0 where the server expires them itself). A save never overwrites: an id already in use is refused.
- Integrity in storage: every store checks the state's digest when it hands it out. That digest is
  unkeyed: it catches accidental corruption and careless writers, not a writer of the storage who
  recomputes it. Give the store a ``secret=`` (16+ random bytes, the same in every process) and it
  keeps an HMAC-SHA256 over the state, its id and its deadline (:func:`dump_state`), refusing any
  rewrite, move or extension with ``PendingStateTamperedError``.
- :func:`seal` / :func:`unseal`: when the state must travel through an untrusted client (a browser,
  a mobile app), seal it with an application secret; ``unseal`` rejects anything altered or forged.
- :class:`NonceLedger`: every state carries a random nonce, and a resume redeems it once, so the same
  state (an object kept in memory, a sealed token) cannot be resumed twice. The default ledger,
  :func:`default_nonce_ledger`, is process-wide and in memory; several processes need a shared one
  (``SqliteNonceLedger``, ``RedisNonceLedger``, ``PostgresNonceLedger``), above all for sealed tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from pydantic import ValidationError

from .._keys import key_check
from ..errors import (
    ConfigurationError,
    PendingStateExpiredError,
    PendingStateNotFoundError,
    PendingStateReusedError,
    PendingStateTamperedError,
)
from ..tools.confirmation import PendingToolCalls
from .outage import store_call

if TYPE_CHECKING:
    import sqlite3

    from ..messages import Message

__all__ = [
    "check_secret",
    "check_state_id",
    "AsyncInMemoryNonceLedger",
    "AsyncInMemoryPendingToolCallStore",
    "AsyncNonceLedger",
    "AsyncPendingToolCallStore",
    "InMemoryNonceLedger",
    "InMemoryPendingToolCallStore",
    "JournaledStore",
    "NonceLedger",
    "PendingToolCallStore",
    "SqlitePendingToolCallStore",
    "StoredPendingToolCalls",
    "aredeem",
    "default_nonce_ledger",
    "dump_state",
    "load_state",
    "open_entry",
    "redeem",
    "seal",
    "seal_entry",
    "unseal",
]

T = TypeVar("T")


@runtime_checkable
class PendingToolCallStore(Protocol):
    """Saves paused states and hands each out once."""

    def save(self, pending: PendingToolCalls) -> str:
        """Store ``pending``; return a new random id to hand to the application's client."""
        ...

    def take(self, state_id: str) -> PendingToolCalls:
        """Remove and return the state (atomic: of two concurrent takes, one fails).

        Raises ``PendingStateNotFoundError`` (unknown or already taken) or ``PendingStateExpiredError``.
        """
        ...

    def peek(self, state_id: str) -> PendingToolCalls:
        """Return the state without removing it; raises as ``take`` does. A peeked state is not yet
        the caller's: only a successful ``take`` is."""
        ...


@runtime_checkable
class AsyncPendingToolCallStore(Protocol):
    """:class:`PendingToolCallStore` for asyncio: the same methods and guarantees, awaited."""

    async def save(self, pending: PendingToolCalls) -> str: ...

    async def take(self, state_id: str) -> PendingToolCalls: ...

    async def peek(self, state_id: str) -> PendingToolCalls: ...


@runtime_checkable
class JournaledStore(Protocol):
    """A pending store that also keeps each state's journal: the progress of the turn resumed from it
    (a :class:`~chatclient.durable.JournalEntry` as text), moved by compare-and-set, so a resume that
    failed after its tools ran is continued by the next one and of concurrent ones exactly one wins.
    Every built-in store is one (async faces: the same methods, awaited)."""

    def progress(self, state_id: str) -> tuple[int, str | None]:
        """``(version, entry)``: ``(0, None)`` when no resume has begun."""
        ...

    def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        """Store ``entry`` as version ``version + 1`` if the journal is still at ``version``; ``False``
        (nothing changed) when another writer moved it first."""
        ...


@dataclass(frozen=True)
class StoredPendingToolCalls:
    """A paused state still in its store, for ``spec.resume_from``: the resume peeks at it, checks
    the decisions and who made them, and only then takes it, so a refused decision leaves it there
    for the right person, while the store's take still lets exactly one resume win.

    The store may be sync or async (``is_async``); an async one is only ever awaited on the request's
    loop (``apeek``/``atake``), so its connections stay on the loop that opened them, and the sync
    ``peek``/``take`` refuse it with a clear error instead of running it elsewhere.
    """

    store: PendingToolCallStore | AsyncPendingToolCallStore
    state_id: str
    after_crash: bool = False
    """Take over a turn whose tools a process that is gone had started (``resume_from(after_crash=True)``)."""

    @property
    def journaled(self) -> bool:
        """The store keeps a journal of the turn's progress (:class:`JournaledStore`)."""
        return callable(getattr(self.store, "record_progress", None))

    def progress(self) -> tuple[int, str | None]:
        return self._sync().progress(self.state_id)  # type: ignore[attr-defined,no-any-return]

    def record_progress(self, version: int, entry: str) -> bool:
        return self._sync().record_progress(self.state_id, version, entry)  # type: ignore[attr-defined,no-any-return]

    async def aprogress(self) -> tuple[int, str | None]:
        found = self.store.progress(self.state_id)  # type: ignore[union-attr]
        return await found if isinstance(found, Awaitable) else found  # type: ignore[no-any-return]

    async def arecord_progress(self, version: int, entry: str) -> bool:
        done = self.store.record_progress(self.state_id, version, entry)  # type: ignore[union-attr]
        return await done if isinstance(done, Awaitable) else done  # type: ignore[no-any-return]

    @property
    def is_async(self) -> bool:
        import inspect

        return inspect.iscoroutinefunction(self.store.peek)

    def peek(self) -> PendingToolCalls:
        return self._sync().peek(self.state_id)

    def take(self) -> PendingToolCalls:
        return self._sync().take(self.state_id)

    async def apeek(self) -> PendingToolCalls:
        found = self.store.peek(self.state_id)
        return await found if isinstance(found, Awaitable) else found

    async def atake(self) -> PendingToolCalls:
        found = self.store.take(self.state_id)
        return await found if isinstance(found, Awaitable) else found

    @property
    def turn_request(self) -> tuple[Message, ...]:
        return self.peek().turn_request

    def _sync(self) -> PendingToolCallStore:
        if self.is_async:
            raise ConfigurationError(
                f"{type(self.store).__name__} is an async pending store: resume from it with acall() or astream() "
                "(its peek and take are awaited on the request's own loop); call() and stream() cannot use it"
            )
        return self.store  # type: ignore[return-value]  # is_async checked the shape


check_state_id = key_check("A pending state id")
"""A state id every store can look up (non-blank, no NUL, at most 512 bytes of UTF-8); anything
else is refused with ``ConfigurationError`` rather than by the driver."""


def _new_id() -> str:
    import secrets

    return secrets.token_urlsafe(24)


def _expires_at(pending: PendingToolCalls, ttl: float | None) -> float | None:
    deadlines = [d for d in (pending.expires_at, time.time() + ttl if ttl is not None else None) if d is not None]
    return min(deadlines) if deadlines else None


def _collided() -> PendingStateNotFoundError:
    # a 192-bit random id collided (or an id source was forced): refuse rather than overwrite
    return PendingStateNotFoundError("A pending state id collided; nothing was stored")


def _live(expires_at: float | None) -> bool:
    return expires_at is None or time.time() <= expires_at


def _check_expiry(expires_at: float | None) -> None:
    if expires_at is not None and time.time() > expires_at:
        raise PendingStateExpiredError("The pending tool calls expired; nothing ran")


_KEYED = "chatclient-hmac-sha256:"
"""How a state stored with a secret begins: ``chatclient-hmac-sha256:<mac>:<deadline>``, a newline,
then the state's JSON (a state without a secret is its bare JSON, as before secrets existed)."""


def check_secret(secret: bytes | None) -> bytes | None:
    """A store's ``secret``: ``None`` (unkeyed) or at least 16 bytes, as :func:`seal` asks."""
    if secret is not None and (not isinstance(secret, bytes) or len(secret) < 16):
        raise ConfigurationError("A pending store's secret is bytes, at least 16 random ones (or None)")
    return secret


def dump_state(pending: PendingToolCalls, state_id: str, deadline: float | None, secret: bytes | None) -> str:
    """The text a store keeps for ``pending`` under ``state_id`` until ``deadline``.

    With a ``secret`` it carries an HMAC-SHA256 over the state's JSON, its id and its deadline, so a
    writer of the store who lacks the secret can neither edit the state (arguments, conversation,
    expiry), nor move it under another id, nor extend the store's deadline, even when it recomputes
    the state's unkeyed digest.
    """
    payload = pending.model_dump_json()
    if secret is None:
        return payload
    until = repr(deadline) if deadline is not None else "-"
    return f"{_KEYED}{_store_mac(secret, state_id, until, payload)}:{until}\n{payload}"


def load_state(text: str | bytes, state_id: str, secret: bytes | None) -> PendingToolCalls:
    """The state a store kept under ``state_id`` (see :func:`dump_state`), verified: a keyed store
    refuses a state whose MAC does not verify or that carries none (written without the secret)
    with ``PendingStateTamperedError``; every store refuses one whose digest does not match."""
    if isinstance(text, bytes):
        text = text.decode()
    payload = text
    if text.startswith(_KEYED):
        header, _, payload = text.partition("\n")
        mac, _, until = header[len(_KEYED) :].partition(":")
        if secret is not None:
            if not hmac.compare_digest(mac, _store_mac(secret, state_id, until, payload)):
                raise PendingStateTamperedError("The stored pending state does not verify (altered); nothing ran")
            _check_expiry(None if until == "-" else float(until))
    elif secret is not None:
        raise PendingStateTamperedError(
            "The stored pending state carries no MAC (written without the store's secret); nothing ran"
        )
    try:
        pending = PendingToolCalls.model_validate_json(payload)
    except ValidationError as exc:
        raise PendingStateTamperedError("The stored pending state is malformed; nothing ran") from exc
    pending.verify()
    return pending


def _store_mac(secret: bytes, state_id: str, until: str, payload: str) -> str:
    bound = "\x00".join(("chatclient.pending.store.v1", state_id, until, payload)).encode()
    return hmac.new(secret, bound, hashlib.sha256).hexdigest()


def seal_entry(secret: bytes | None, state_id: str, version: int, entry: str) -> str:
    """The journal entry a store keeps as ``version`` of ``state_id``'s journal: with a ``secret``, an
    HMAC over it, the id and the version, so a writer of the storage cannot put results of its own
    before the model (nor replay an old entry, nor move one to another state)."""
    if secret is None:
        return entry
    return f"{_KEYED}{_journal_mac(secret, state_id, version, entry)}\n{entry}"


def open_entry(secret: bytes | None, state_id: str, version: int, text: str) -> str:
    """The entry :func:`seal_entry` kept; ``PendingStateTamperedError`` when it does not verify."""
    if text.startswith(_KEYED):
        header, _, entry = text.partition("\n")
        if secret is not None and not hmac.compare_digest(
            header[len(_KEYED) :], _journal_mac(secret, state_id, version, entry)
        ):
            raise PendingStateTamperedError("The pending state's journal does not verify (altered); nothing ran")
        return entry
    if secret is not None:
        raise PendingStateTamperedError("The pending state's journal carries no MAC; nothing ran")
    return text


def _journal_mac(secret: bytes, state_id: str, version: int, entry: str) -> str:
    bound = "\x00".join(("chatclient.pending.journal.v1", state_id, str(version), entry)).encode()
    return hmac.new(secret, bound, hashlib.sha256).hexdigest()


def _opened(secret: bytes | None, state_id: str, found: tuple[int, str | None]) -> tuple[int, str | None]:
    version, text = found
    return found if text is None else (version, open_entry(secret, state_id, version, text))


class InMemoryPendingToolCallStore:
    """A process-local store; ``ttl`` (seconds) bounds how long a pause may wait for a person.

    States are kept as the text every store keeps (see :func:`dump_state`), so ``secret`` works as
    on the shared stores, and a state handed out is a copy nobody else holds.
    """

    def __init__(self, ttl: float | None = 3600.0, *, secret: bytes | None = None) -> None:
        self._ttl = ttl
        self._secret = check_secret(secret)
        self._states: dict[str, tuple[str, float | None]] = {}
        self._journal: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def save(self, pending: PendingToolCalls) -> str:
        state_id = _new_id()
        deadline = _expires_at(pending, self._ttl)
        stored = dump_state(pending, state_id, deadline, self._secret)
        with self._lock:
            self._purge()
            if state_id in self._states:
                raise _collided()
            self._states[state_id] = (stored, deadline)
        return state_id

    def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with self._lock:
            entry = self._states.pop(state_id, None)
            self._journal.pop(state_id, None)
        if entry is None:
            raise PendingStateNotFoundError("No pending tool calls under this id (unknown, or already resumed)")
        _check_expiry(entry[1])
        return load_state(entry[0], state_id, self._secret)

    def progress(self, state_id: str) -> tuple[int, str | None]:
        """The journal of the turn resumed from this state (see :class:`JournaledStore`)."""
        check_state_id(state_id)
        with self._lock:
            found: tuple[int, str | None] = self._journal.get(state_id, (0, None))
        return _opened(self._secret, state_id, found)

    def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        check_state_id(state_id)
        sealed = seal_entry(self._secret, state_id, version + 1, entry)
        with self._lock:
            if state_id not in self._states:
                return False
            if self._journal.get(state_id, (0, None))[0] != version:
                return False
            self._journal[state_id] = (version + 1, sealed)
            return True

    def peek(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with self._lock:
            entry = self._states.get(state_id)
        if entry is None:
            raise PendingStateNotFoundError("No pending tool calls under this id (unknown, or already resumed)")
        _check_expiry(entry[1])
        return load_state(entry[0], state_id, self._secret)

    def discard(self, state_id: str) -> bool:
        """Drop a state nobody will resume; ``True`` when a live one was there (an expired state
        is dropped too but answers ``False``, as on every backend: Redis has already forgotten it)."""
        check_state_id(state_id)
        with self._lock:
            entry = self._states.pop(state_id, None)
        return entry is not None and _live(entry[1])

    def purge_expired(self) -> int:
        """Remove the expired states now; the number removed."""
        with self._lock:
            return self._purge()

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._states)

    def _purge(self) -> int:
        now = time.time()
        expired = [k for k, (_, deadline) in self._states.items() if deadline is not None and now > deadline]
        for key in expired:
            del self._states[key]
            self._journal.pop(key, None)
        return len(expired)


class AsyncInMemoryPendingToolCallStore:
    """The async face of :class:`InMemoryPendingToolCallStore` (``sync``), for code written against
    :class:`AsyncPendingToolCallStore`; each call runs in a worker thread, as SQLite's async face."""

    def __init__(self, ttl: float | None = 3600.0, *, secret: bytes | None = None) -> None:
        self.sync = InMemoryPendingToolCallStore(ttl=ttl, secret=secret)

    async def save(self, pending: PendingToolCalls) -> str:
        return await _in_thread(lambda: self.sync.save(pending))

    async def take(self, state_id: str) -> PendingToolCalls:
        return await _in_thread(lambda: self.sync.take(state_id))

    async def peek(self, state_id: str) -> PendingToolCalls:
        return await _in_thread(lambda: self.sync.peek(state_id))

    async def progress(self, state_id: str) -> tuple[int, str | None]:
        return await _in_thread(lambda: self.sync.progress(state_id))

    async def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        return await _in_thread(lambda: self.sync.record_progress(state_id, version, entry))

    async def discard(self, state_id: str) -> bool:
        return await _in_thread(lambda: self.sync.discard(state_id))

    async def purge_expired(self) -> int:
        return await _in_thread(self.sync.purge_expired)


async def _in_thread(call: Callable[[], T]) -> T:
    from .._storage.threads import in_thread  # the helper SQLite's async faces use

    return await in_thread(call)


class SqlitePendingToolCallStore:
    """A store in an SQLite file, shared by the processes of one machine and surviving restarts.

    States live in table ``{prefix}pending_tool_calls`` (the default prefix keeps the table of
    earlier versions). ``take`` is one ``DELETE ... RETURNING`` statement, so a state is handed out
    once even when two processes race for it. With a ``secret``, a state rewritten in the file by
    anyone without it is refused (see :func:`dump_state`).
    """

    def __init__(
        self, path: str | Path, ttl: float | None = 3600.0, *, prefix: str = "chatclient_", secret: bytes | None = None
    ) -> None:
        from .._storage.sql import check_prefix
        from .._storage.sqlite import SqliteDatabase  # only stores that use it pay for sqlite3

        self._secret = check_secret(secret)
        self._table = f"{check_prefix(prefix)}pending_tool_calls"
        self._journal = f"{check_prefix(prefix)}pending_journal"
        self._ttl = ttl
        self._db = SqliteDatabase(path)
        with self._connect() as db:
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {self._table} ("
                "id TEXT PRIMARY KEY, state TEXT NOT NULL, expires_at REAL, created_at REAL NOT NULL)"
            )
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {self._journal} ("
                "id TEXT PRIMARY KEY, version INTEGER NOT NULL, entry TEXT NOT NULL, expires_at REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        return self._db.connection()

    def save(self, pending: PendingToolCalls) -> str:
        state_id = _new_id()
        deadline = _expires_at(pending, self._ttl)
        stored = dump_state(pending, state_id, deadline, self._secret)
        with store_call(self, "save"):
            db = self._connect()
            db.execute(f"DELETE FROM {self._table} WHERE expires_at < ?", (time.time(),))
            row = db.execute(
                f"INSERT INTO {self._table} (id, state, expires_at, created_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (state_id, stored, deadline, time.time()),
            ).fetchone()
        if row is None:
            raise _collided()
        return state_id

    def take(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "take"):
            sql = f"DELETE FROM {self._table} WHERE id = ? RETURNING state, expires_at"
            db = self._connect()
            row = db.execute(sql, (state_id,)).fetchone()
            db.execute(f"DELETE FROM {self._journal} WHERE id = ?", (state_id,))
        if row is None:
            raise PendingStateNotFoundError("No pending tool calls under this id (unknown, or already resumed)")
        _check_expiry(row[1])
        return load_state(row[0], state_id, self._secret)

    def peek(self, state_id: str) -> PendingToolCalls:
        check_state_id(state_id)
        with store_call(self, "peek"):
            sql = f"SELECT state, expires_at FROM {self._table} WHERE id = ?"
            row = self._connect().execute(sql, (state_id,)).fetchone()
        if row is None:
            raise PendingStateNotFoundError("No pending tool calls under this id (unknown, or already resumed)")
        _check_expiry(row[1])
        return load_state(row[0], state_id, self._secret)

    def progress(self, state_id: str) -> tuple[int, str | None]:
        """The journal of the turn resumed from this state (see :class:`JournaledStore`)."""
        check_state_id(state_id)
        with store_call(self, "progress"):
            sql = f"SELECT version, entry FROM {self._journal} WHERE id = ?"
            row = self._connect().execute(sql, (state_id,)).fetchone()
        return (0, None) if row is None else _opened(self._secret, state_id, (int(row[0]), str(row[1])))

    def record_progress(self, state_id: str, version: int, entry: str) -> bool:
        """Compare-and-set in one statement (SQLite serialises writers), while the state waits."""
        check_state_id(state_id)
        entry = seal_entry(self._secret, state_id, version + 1, entry)
        j = self._journal
        if version == 0:
            sql = (
                f"INSERT INTO {j} (id, version, entry, expires_at) SELECT id, 1, ?, expires_at FROM {self._table}"
                " WHERE id = ? ON CONFLICT (id) DO NOTHING RETURNING 1"
            )
            args: tuple[object, ...] = (entry, state_id)
        else:
            sql = (
                f"UPDATE {j} SET version = ?, entry = ? WHERE id = ? AND version = ?"
                f" AND EXISTS (SELECT 1 FROM {self._table} WHERE id = ?) RETURNING 1"
            )
            args = (version + 1, entry, state_id, version, state_id)
        with store_call(self, "record_progress"):
            return self._connect().execute(sql, args).fetchone() is not None

    def discard(self, state_id: str) -> bool:
        """Drop a state nobody will resume; ``True`` when a live one was there (expired: ``False``)."""
        check_state_id(state_id)
        sql = f"DELETE FROM {self._table} WHERE id = ? RETURNING expires_at"
        with store_call(self, "discard"):
            row = self._connect().execute(sql, (state_id,)).fetchone()
        return row is not None and _live(row[0])

    def purge_expired(self) -> int:
        """Remove the expired states now; the number removed."""
        with store_call(self, "purge_expired"):
            db, now = self._connect(), time.time()
            db.execute(f"DELETE FROM {self._journal} WHERE expires_at < ?", (now,))
            return db.execute(f"DELETE FROM {self._table} WHERE expires_at < ?", (now,)).rowcount

    def close(self) -> None:
        """Close the connections of every thread that used the store (the async face's workers
        too); a later call opens a new one."""
        self._db.close()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, payload: bytes) -> bytes:
    import hmac

    return hmac.new(secret, b"chatclient.pending.v1." + payload, hashlib.sha256).digest()


def seal(pending: PendingToolCalls, secret: bytes) -> str:
    """A tamper-evident token for ``pending``: its JSON plus an HMAC-SHA256 with ``secret``.

    The token is signed, not encrypted: do not put secrets in tool arguments you seal. A token can
    reach any process, so resume it against a shared nonce ledger (a warning is logged once when one
    is resumed against an in-process ledger), and seal states that expire (a warning is logged once
    for one that never does).
    """
    if len(secret) < 16:
        raise ValueError("Use a secret of at least 16 random bytes to seal pending states")
    if pending.expires_at is None:
        _warn_once(
            "unexpiring",
            "seal() of a pending state that never expires: its token can be resumed for as long as a nonce "
            "ledger remembers it (an in-memory one forgets on restart). Give states an expiry "
            "(ToolCallingManager pending_expires_in; the default is an hour)",
        )
    payload = pending.model_dump_json().encode()
    return f"{_b64(payload)}.{_b64(_mac(secret, payload))}"


def unseal(token: str, secret: bytes) -> PendingToolCalls:
    """The state inside a sealed token; ``PendingStateTamperedError`` if anything was changed."""
    try:
        payload_text, mac_text = token.split(".")
        payload, mac = _unb64(payload_text), _unb64(mac_text)
    except ValueError as exc:
        raise PendingStateTamperedError("The sealed pending state is malformed; nothing ran") from exc
    import hmac

    if not hmac.compare_digest(mac, _mac(secret, payload)):
        raise PendingStateTamperedError("The sealed pending state does not verify (altered or forged); nothing ran")
    try:
        pending = PendingToolCalls.model_validate_json(payload)
    except ValidationError as exc:
        raise PendingStateTamperedError("The sealed pending state is malformed; nothing ran") from exc
    pending.verify()
    _unsealed.note(pending.nonce)
    return pending


_log = logging.getLogger("chatclient.tools")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(topic: str, message: str) -> None:
    """Log ``message`` as a warning the first time ``topic`` comes up in this process."""
    with _warned_lock:
        if topic in _warned:
            return
        _warned.add(topic)
    _log.warning(message)


class _RecentNonces:
    """The nonces of the states :func:`unseal` returned lately (bounded), so a resume can tell a
    state that travelled as a token from one kept in memory."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._nonces: dict[str, None] = {}
        self._lock = threading.Lock()

    def note(self, nonce: str) -> None:
        with self._lock:
            self._nonces[nonce] = None
            if len(self._nonces) > self._size:
                del self._nonces[next(iter(self._nonces))]

    def __contains__(self, nonce: object) -> bool:
        with self._lock:
            return nonce in self._nonces


_unsealed = _RecentNonces()


def _check_ledger_for_sealed(pending: PendingToolCalls, ledger: object) -> None:
    """A sealed token can reach any process; a ledger in one process cannot stop it running in two."""
    if isinstance(ledger, (InMemoryNonceLedger, AsyncInMemoryNonceLedger)) and pending.nonce in _unsealed:
        _warn_once(
            "sealed-in-process",
            "A sealed pending state was resumed against an in-process nonce ledger: another process can "
            "resume the same token again. Give the tool loop a shared ledger (SqliteNonceLedger, "
            "RedisNonceLedger or PostgresNonceLedger, or their Async faces) as ToolCallingAdvisor(nonce_ledger=...)",
        )


# ---------------------------------------------------------------------------------------- nonces


@runtime_checkable
class NonceLedger(Protocol):
    """Remembers which pending states were resumed, so each is resumed once."""

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        """Mark ``nonce`` used; ``True`` the first time, ``False`` ever after (atomic)."""
        ...

    def release(self, nonce: str) -> None:
        """Undo a redeem whose resume was refused before anything ran (say, invalid decisions)."""
        ...


@runtime_checkable
class AsyncNonceLedger(Protocol):
    """:class:`NonceLedger` for asyncio: the same methods and guarantees, awaited."""

    async def redeem(self, nonce: str, expires_at: float | None) -> bool: ...

    async def release(self, nonce: str) -> None: ...


class InMemoryNonceLedger:
    """A process-local ledger. A nonce is kept until its state would have expired, or for
    ``retention`` seconds (default a week) when the state has no expiry; after that a replay of an
    unexpiring state is no longer recognised, so give states an expiry (``pending_expires_in``)."""

    def __init__(self, retention: float = 7 * 24 * 3600.0) -> None:
        self._retention = retention
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()

    def redeem(self, nonce: str, expires_at: float | None) -> bool:
        now = time.time()
        keep_until = expires_at if expires_at is not None else now + self._retention
        with self._lock:
            if nonce in self._used:
                return False
            if len(self._used) > 1024:
                self._used = {n: t for n, t in self._used.items() if t > now}
            self._used[nonce] = keep_until
            return True

    def release(self, nonce: str) -> None:
        with self._lock:
            self._used.pop(nonce, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._used)


class AsyncInMemoryNonceLedger:
    """The async face of :class:`InMemoryNonceLedger` (``sync``); each call runs in a worker thread."""

    def __init__(self, retention: float = 7 * 24 * 3600.0) -> None:
        self.sync = InMemoryNonceLedger(retention)

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        return await _in_thread(lambda: self.sync.redeem(nonce, expires_at))

    async def release(self, nonce: str) -> None:
        await _in_thread(lambda: self.sync.release(nonce))


_default_ledger = InMemoryNonceLedger()


def default_nonce_ledger() -> InMemoryNonceLedger:
    """The process-wide ledger the tool loop uses unless it is given another."""
    return _default_ledger


def redeem(pending: PendingToolCalls, ledger: NonceLedger | None = None) -> None:
    """Redeem ``pending``'s nonce once; ``PendingStateReusedError`` when it was already redeemed."""
    _check_nonce(pending)
    ledger = ledger if ledger is not None else _default_ledger
    _check_ledger_for_sealed(pending, ledger)
    if not ledger.redeem(pending.nonce, pending.expires_at):
        raise _reused()


async def aredeem(pending: PendingToolCalls, ledger: AsyncNonceLedger) -> None:
    """:func:`redeem` on an async ledger."""
    _check_nonce(pending)
    _check_ledger_for_sealed(pending, ledger)
    if not await ledger.redeem(pending.nonce, pending.expires_at):
        raise _reused()


def _check_nonce(pending: PendingToolCalls) -> None:
    if not pending.nonce:
        raise PendingStateTamperedError("The pending state has no nonce (made by an older version?); nothing ran")


def _reused() -> PendingStateReusedError:
    return PendingStateReusedError("These pending tool calls were already resumed once; nothing ran")
