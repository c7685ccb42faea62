"""The memory advisor's calls to its store, with the driver's failures made chatclient errors.

A turn write that fails on a dropped connection is retried once in place (the pool's next
connection is usually a fresh one after a server restart); any other failure, or a second one,
becomes :class:`SessionWriteError` carrying the completed turn. A read failure becomes
:class:`SessionStoreError` (:func:`read_failed`) before the model is called. The drivers are never imported here: a
transient error is recognised by its class's name and module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ChatClientError
from .errors import ConcurrentTurnError, SessionStoreError, SessionWriteError
from .log import AppendResult, NewEvent, VersionConflict

if TYPE_CHECKING:
    from ..envelope import ChatClientResponse

__all__ = ["aappend_turn", "append_failed", "is_transient", "read_failed"]

# Not psycopg_pool's PoolTimeout: the pool already waited its whole timeout, reconnecting meanwhile.
_TRANSIENT_NAMES = frozenset({"ConnectionError", "TimeoutError", "OperationalError", "InterfaceError"})
_DRIVERS = ("redis", "psycopg", "sqlite3")


def is_transient(exc: BaseException) -> bool:
    """A lost or refused connection (worth one more attempt), not a refusal of the data."""
    if isinstance(exc, ChatClientError):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    for cls in type(exc).__mro__:
        if cls.__name__ in _TRANSIENT_NAMES and cls.__module__.split(".")[0] in _DRIVERS:
            return True
    return False


def _wrapped(
    exc: Exception, conversation_id: str, events: Sequence[NewEvent], response: ChatClientResponse, repository: Any
) -> ChatClientError:
    if isinstance(exc, VersionConflict):
        return ConcurrentTurnError(exc, events, response, repository)
    return SessionWriteError(conversation_id, events, response, repository, exc)


def append_failed(
    exc: Exception,
    repository: Any,
    conversation_id: str,
    events: Sequence[NewEvent],
    expected_version: int | None,
    response: ChatClientResponse,
    *,
    owner: Any = None,
) -> AppendResult:
    """What follows a turn's append that raised ``exc`` (the advisor makes the first attempt
    itself, inline): the error that carries the turn, or a second attempt after a dropped
    connection. ``owner``: the repository the application gave (the error's ``retry()`` uses it)."""
    owner = repository if owner is None else owner
    error = _after_failure(exc, 1, conversation_id, events, response, owner)
    if error is not None:
        if error is exc:
            raise exc
        raise error from exc
    try:
        result: AppendResult = repository.append(conversation_id, events, expected_version=expected_version)
        return result
    except Exception as again:
        second = _after_failure(again, 2, conversation_id, events, response, owner)
        if second is None or second is again:  # never None: only a first failure is retried
            raise
        raise second from again


async def aappend_turn(
    repository: Any,
    conversation_id: str,
    events: Sequence[NewEvent],
    expected_version: int | None,
    response: ChatClientResponse,
    *,
    owner: Any = None,
) -> AppendResult:
    """Append the turn to an async repository: one in-place retry on a dropped connection; a
    failure carries the turn (as :func:`append_failed`)."""
    owner = repository if owner is None else owner
    for attempt in (1, 2):
        try:
            result: AppendResult = await repository.append(conversation_id, events, expected_version=expected_version)
            return result
        except Exception as exc:
            error = _after_failure(exc, attempt, conversation_id, events, response, owner)
            if error is None:
                continue
            if error is exc:
                raise
            raise error from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _after_failure(
    exc: Exception,
    attempt: int,
    conversation_id: str,
    events: Sequence[NewEvent],
    response: ChatClientResponse,
    owner: Any,
) -> Exception | None:
    """What a failed append raises (``exc`` itself for chatclient's own errors but a conflict), or
    ``None`` to retry in place: the first failure on a dropped connection."""
    if isinstance(exc, ChatClientError):
        return _wrapped(exc, conversation_id, events, response, owner) if isinstance(exc, VersionConflict) else exc
    if attempt == 1 and is_transient(exc):
        return None
    return _wrapped(exc, conversation_id, events, response, owner)


def read_failed(exc: Exception, repository: Any, conversation_id: str) -> SessionStoreError:
    """The error for a driver's failure while reading the history (the advisor raises it from
    ``exc``; a chatclient error is re-raised as it is, before this is reached)."""
    backend = type(repository).__name__
    return SessionStoreError(
        f"Could not read conversation {conversation_id!r} from {backend} ({type(exc).__name__}: {exc}); "
        "the model was not called",
        conversation_id=conversation_id,
        backend=backend,
    )
