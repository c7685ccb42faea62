"""Session expiry and pruning: the rules every backend applies (written once, here).

A session expires ``ttl`` seconds after its **last append** (the ``created_at`` of its newest
event): an idle conversation goes, an active one stays. An expired session reads as empty (no
events, version 0) before anything purges it, and a later append does not bring the old log back:
it starts a fresh log at ``seq`` 1 (with the repository's default ttl and no metadata: the
expired session is gone). ``create(session_id, ttl=..., metadata=...)`` gives one session its own
ttl (on a repository with a default one); an empty created session expires from its creation.
``delete_expired`` removes expired sessions with all their events (Redis: the server expires the
keys itself, so it removes nothing).

``prune(session_id, below_seq)`` removes the events numbered below ``below_seq``, which may not
reach past the latest compaction boundary's first kept event: the view (boundary, summary, kept
turns) is the same after as before. Numbers are never reused; the version stays the last ``seq``.
A pruned event's id is forgotten, so only prune what no writer will retry (a turn behind a
boundary is long finished).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import ConfigurationError
from .log import SessionEvent

__all__ = ["Session", "check_ttl", "expired", "prune_limit", "session_of", "session_to_create"]


class Session(NamedTuple):
    """A session as ``create``/``get`` report it: ``ttl`` is its own (``None``: the repository's),
    ``metadata`` what ``create`` was given (JSON)."""

    id: str
    created_at: float
    ttl: float | None = None
    metadata: Mapping[str, Any] = {}


def session_to_create(
    session_id: str | None, ttl: float | None, metadata: Mapping[str, Any] | None, default_ttl: float | None
) -> tuple[str, float | None, str]:
    """The checked id (a random one when ``None``), ttl and metadata JSON of a ``create``. A
    session's own ttl needs a repository that checks expiry (one with a default ``ttl``)."""
    from .log import check_session_id

    session_id = uuid.uuid4().hex if session_id is None else check_session_id(session_id)
    if ttl is not None and default_ttl is None:
        raise ConfigurationError(
            "A session ttl needs a repository that expires sessions: give the repository a default ttl= "
            "(the sessions created without one keep it)"
        )
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ConfigurationError(f"Session metadata must be a mapping, got {type(metadata).__name__}")
    try:
        text = json.dumps(dict(metadata or {}), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"Session metadata must be JSON: {exc}") from exc
    return session_id, check_ttl(ttl), text


def session_of(session_id: str, created_at: float, ttl: float | None, metadata: str | None) -> Session:
    return Session(session_id, float(created_at), None if ttl is None else float(ttl), json.loads(metadata or "{}"))


def check_ttl(ttl: float | None) -> float | None:
    """``None`` (never expire) or a positive number of seconds."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ConfigurationError(f"A session ttl must be a positive number of seconds or None, got {ttl!r}")
    return float(ttl)


def expired(last_active: float | None, ttl: float | None, now: float) -> bool:
    """Whether a session last written at ``last_active`` has expired at ``now``."""
    return ttl is not None and last_active is not None and last_active + ttl <= now


def prune_limit(session_id: str, below_seq: int, boundaries: Sequence[SessionEvent]) -> int:
    """``below_seq`` checked against the latest boundary (``boundaries``: it, or nothing)."""
    if isinstance(below_seq, bool) or not isinstance(below_seq, int) or below_seq < 1:
        raise ConfigurationError(f"prune needs a positive seq to prune below, got {below_seq!r}")
    if not boundaries:
        raise ConfigurationError(
            f"Session {session_id!r} has no compaction boundary: nothing may be pruned (the view needs every event)"
        )
    first_kept = int(json.loads(boundaries[-1].payload)["first_kept_seq"])
    if below_seq > first_kept:
        raise ConfigurationError(
            f"Session {session_id!r} keeps its events from seq {first_kept} (its latest compaction boundary, "
            f"seq {boundaries[-1].seq}); prune below {below_seq} would cut the view. Nothing was pruned"
        )
    return below_seq
