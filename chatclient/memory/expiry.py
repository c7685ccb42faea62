"""Session expiry and pruning: the rules every backend applies (written once, here).

A session expires ``ttl`` seconds after its **last append** (the ``created_at`` of its newest
event): an idle conversation goes, an active one stays. An expired session reads as empty (no
events, version 0) before anything purges it, and a later append does not bring the old log back:
it starts a fresh log at ``seq`` 1. ``delete_expired`` removes expired sessions with all their
events (Redis: the server expires the keys itself, so it removes nothing).

``prune(session_id, below_seq)`` removes the events numbered below ``below_seq``, which may not
reach past the latest compaction boundary's first kept event: the view (boundary, summary, kept
turns) is the same after as before. Numbers are never reused; the version stays the last ``seq``.
A pruned event's id is forgotten, so only prune what no writer will retry (a turn behind a
boundary is long finished).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from ..errors import ConfigurationError
from .log import SessionEvent

__all__ = ["check_ttl", "expired", "live", "prune_limit"]


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


def live(events: list[SessionEvent], ttl: float | None, now: float) -> list[SessionEvent]:
    """``events`` (a read that ends at the log's newest event), or ``[]`` if the session expired."""
    return [] if events and expired(events[-1].created_at, ttl, now) else events


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
