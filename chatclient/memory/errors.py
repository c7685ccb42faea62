"""What the memory advisor raises when the store fails or refuses a turn: never the driver's raw
error, and never a finished turn thrown away. A write error carries the turn's exact events, so the
application can store them again (``error.retry()``): the ids come from the turn id, so a second
append of the same events is a no-op, whatever the first attempt did."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ChatClientError
from .log import AppendResult, NewEvent, VersionConflict

if TYPE_CHECKING:
    from ..envelope import ChatClientResponse

__all__ = ["ConcurrentTurnError", "SessionStoreError", "SessionWriteError"]


class SessionStoreError(ChatClientError):
    """The session store failed (unreachable, restarted, timed out); the driver's error is the cause.

    Raised as is for a read, before the model is called: nothing ran."""

    def __init__(self, message: str, *, conversation_id: str, backend: str) -> None:
        super().__init__(message)
        self.conversation_id, self.backend = conversation_id, backend


class _HoldsTurn:
    """The completed turn an error carries: the response and the events still to append."""

    conversation_id: str
    events: tuple[NewEvent, ...]
    response: ChatClientResponse
    repository: Any

    def retry(self) -> AppendResult:
        """Append the turn's events again (sync repository); a replay of stored ids changes nothing."""
        append = self.repository.append
        if inspect.iscoroutinefunction(append):
            raise TypeError("The session repository is async: use `await error.aretry()`")
        result: AppendResult = append(self.conversation_id, list(self.events))
        return result

    async def aretry(self) -> AppendResult:
        """:meth:`retry` for an async repository (a sync one is called directly)."""
        found = self.repository.append(self.conversation_id, list(self.events))
        result: AppendResult = await found if inspect.isawaitable(found) else found
        return result


class SessionWriteError(_HoldsTurn, SessionStoreError):
    """The turn completed (its tools ran) but the store could not write it.

    ``response`` is the completed turn; ``events`` are exactly what to append to
    ``conversation_id``: ``error.retry()`` (``await error.aretry()``) or
    ``repository.append(error.conversation_id, error.events)`` once the store is back."""

    def __init__(
        self,
        conversation_id: str,
        events: Sequence[NewEvent],
        response: ChatClientResponse,
        repository: Any,
        cause: BaseException,
    ) -> None:
        backend = type(repository).__name__
        super().__init__(
            f"Could not store the turn of conversation {conversation_id!r} in {backend} "
            f"({type(cause).__name__}: {cause}); the turn completed: error.retry() stores it",
            conversation_id=conversation_id,
            backend=backend,
        )
        self.events, self.response, self.repository = tuple(events), response, repository


class ConcurrentTurnError(_HoldsTurn, VersionConflict):
    """``concurrency="raise"``: another turn was stored after this one read its history; this turn
    completed but was not stored. ``events``/``response``/``retry()`` as on :class:`SessionWriteError`
    (a retry appends after the other turn)."""

    def __init__(
        self, conflict: VersionConflict, events: Sequence[NewEvent], response: ChatClientResponse, repository: Any
    ) -> None:
        super().__init__(conflict.session_id, conflict.expected, conflict.current)
        self.args = (
            f"{self.args[0]}; this turn completed and was not stored: error.retry() appends it after the other",
        )
        self.conversation_id = conflict.session_id
        self.events, self.response, self.repository = tuple(events), response, repository
