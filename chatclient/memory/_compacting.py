"""Reading a compacted view and compacting after a turn, for the sync and the async advisor.

The view is two reads: the latest boundary (``types=("compaction",), last=1``) and the events from
its first kept one on (``last=window``). Compaction runs after the turn is written, on the version
that append returned; the boundary is appended with that ``expected_version`` and an id made from
it, so of concurrent writers only the one holding the latest version compacts, and once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..errors import ChatClientError
from ..prompt import Prompt
from .compaction import (
    BOUNDARY,
    Compaction,
    CompactionPlan,
    SessionView,
    boundary_event,
    first_kept_seq,
    plan_compaction,
    summary_messages,
    view_of,
)
from .log import AppendResult, IdempotencyMismatch, NewEvent, SessionEvent, VersionConflict
from .repository import AsyncSessionRepository, SessionRepository
from .window import read_size

__all__ = ["acompact", "aread_log", "compact", "read_log", "view_after"]

logger = logging.getLogger("chatclient.memory")


def read_log(
    repository: SessionRepository, session_id: str, window: int | None
) -> tuple[SessionEvent | None, list[SessionEvent]]:
    """The latest boundary and the events of the view after it."""
    boundaries = repository.events(session_id, last=1, types=(BOUNDARY,))
    boundary = boundaries[-1] if boundaries else None
    return boundary, repository.events(session_id, after_seq=first_kept_seq(boundary) - 1, last=read_size(window))


async def aread_log(
    repository: AsyncSessionRepository, session_id: str, window: int | None
) -> tuple[SessionEvent | None, list[SessionEvent]]:
    boundaries = await repository.events(session_id, last=1, types=(BOUNDARY,))
    boundary = boundaries[-1] if boundaries else None
    return boundary, await repository.events(session_id, after_seq=first_kept_seq(boundary) - 1, last=read_size(window))


def view_after(
    read: Sequence[SessionEvent], boundary: SessionEvent | None, written: Sequence[NewEvent], result: AppendResult
) -> SessionView | None:
    """The view right after this turn's append, when nobody else wrote in between (``None``: read again)."""
    base = read[-1].seq if read else 0
    if result.version != base + len(written) or result.appended != len(written):
        return None
    new = [SessionEvent("", base + n, e.event_id, e.turn_id, e.type, e.payload, 0.0) for n, e in enumerate(written, 1)]
    return view_of([*read, *new], boundary)


def _planned(session_id: str, compaction: Compaction, view: SessionView, version: int) -> CompactionPlan | None:
    """The plan, or ``None``; a failing trigger, strategy or token counter (say, tiktoken unable
    to load its encoding) is logged and never fails the turn, which is already stored."""
    try:
        return plan_compaction(compaction, view, version)
    except Exception:
        logger.warning("Compaction of %r could not be planned; the view stays as it is", session_id, exc_info=True)
        return None


def _skipped(plan: CompactionPlan, exc: ChatClientError) -> None:
    logger.debug("Compaction at version %d skipped: %s", plan.base_version, exc)


def compact(
    repository: SessionRepository, session_id: str, compaction: Compaction, view: SessionView, version: int
) -> bool:
    """Append a boundary if ``view`` (at ``version``) is due; ``True`` when one landed."""
    plan = _planned(session_id, compaction, view, version)
    if plan is None:
        return False
    summary = None
    if plan.summariser is not None:
        try:
            text = plan.summariser.client.prompt(Prompt(plan.summariser.request(plan))).call().content()
        except Exception:
            logger.warning("The summary for compacting %r failed; the view stays as it is", session_id, exc_info=True)
            return False
        if (summary := summary_messages(text)) is None:
            logger.info("The summary for compacting %r came back blank; compaction skipped", session_id)
            return False
    try:
        result = repository.append(session_id, [boundary_event(plan, summary)], expected_version=version)
    except (VersionConflict, IdempotencyMismatch) as exc:
        _skipped(plan, exc)
        return False
    return result.appended > 0  # 0: the same boundary was already there


async def acompact(
    repository: AsyncSessionRepository, session_id: str, compaction: Compaction, view: SessionView, version: int
) -> bool:
    plan = _planned(session_id, compaction, view, version)
    if plan is None:
        return False
    summary = None
    if plan.summariser is not None:
        try:
            text = await plan.summariser.client.prompt(Prompt(plan.summariser.request(plan))).acall().content()
        except Exception:
            logger.warning("The summary for compacting %r failed; the view stays as it is", session_id, exc_info=True)
            return False
        if (summary := summary_messages(text)) is None:
            logger.info("The summary for compacting %r came back blank; compaction skipped", session_id)
            return False
    try:
        result = await repository.append(session_id, [boundary_event(plan, summary)], expected_version=version)
    except (VersionConflict, IdempotencyMismatch) as exc:
        _skipped(plan, exc)
        return False
    return result.appended > 0
