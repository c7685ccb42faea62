"""The session log: events, the result of an append, and the append rule every backend applies.

A conversation is one append-only log. A turn is appended as one batch whose event ids come from
the turn id (``f"{turn_id}:{n}"``), so a retried append is recognised and changes nothing. The store
numbers events 1, 2, 3 … without gaps and its version is the last number; ``expected_version``
makes a concurrent writer visible as :class:`VersionConflict`, with nothing of the batch written.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from .._context_keys import CONVERSATION_ID, check_conversation_id  # re-exported: memory's names for them
from ..errors import ChatClientError, ConfigurationError
from ..messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage, UserMessage
from ._frozen import frozen

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "CONVERSATION_ID",
    "AppendResult",
    "IdempotencyMismatch",
    "NewEvent",
    "SessionEvent",
    "VersionConflict",
    "check_session_id",
    "decode_message",
    "decode_messages",
    "message_events",
    "encode_message",
    "plan_append",
    "turn_events",
]


_MESSAGE_TYPES = frozenset({SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage})


class VersionConflict(ChatClientError):
    """The log moved since the version the writer read; nothing of the batch was written."""

    def __init__(self, session_id: str, expected: int, current: int) -> None:
        super().__init__(
            f"Session {session_id!r} is at version {current}, not the expected {expected}; nothing written"
        )
        self.session_id, self.expected, self.current = session_id, expected, current


class IdempotencyMismatch(ChatClientError):
    """An event id already in the log arrived with a different payload (two writers reused an id)."""


class NewEvent(NamedTuple):
    """An event to append: its id (unique in the session), turn, type and payload text.

    The log's records are named tuples: immutable, and built several times per turn at a quarter of
    a frozen dataclass's cost (a frozen dataclass sets each field through ``object.__setattr__``)."""

    event_id: str
    turn_id: str
    payload: str
    type: str = "message"


class SessionEvent(NamedTuple):
    """An event as stored: ``seq`` is its place in the log (1, 2, 3 … without gaps)."""

    session_id: str
    seq: int
    event_id: str
    turn_id: str
    type: str
    payload: str
    created_at: float

    def message(self) -> Message:
        """The message this event holds (``type == "message"``), exactly as it was appended."""
        if self.type != "message":
            raise ValueError(f"Event {self.event_id!r} is a {self.type!r} event, not a message (filter on type)")
        return decode_message(self.payload)

    @property
    def starts_turn(self) -> bool:
        """The first event of its turn (a window may begin here without splitting a turn)."""
        return self.event_id == f"{self.turn_id}:0"


class AppendResult(NamedTuple):
    """What an append did: the log's version after it, events added, events recognised as replays."""

    version: int
    appended: int
    replayed: int


@lru_cache(maxsize=1)
def _adapter() -> TypeAdapter[Message]:
    from pydantic import TypeAdapter

    return TypeAdapter(Message)


_DECODED: dict[str, Message] = {}
"""Decoded messages by their stored payload, oldest first (bounded by ``_DECODED_MAX``)."""
_DECODED_MAX = 8192
_DECODED_LOCK = threading.Lock()


def _remember(payload: str, message: Message) -> None:
    with _DECODED_LOCK:
        while len(_DECODED) >= _DECODED_MAX:
            del _DECODED[next(iter(_DECODED))]
        _DECODED[payload] = message


def encode_message(message: Message) -> str:
    """The one stored form of a message: its JSON with every field (provider metadata included).

    A read-only twin of the message is remembered as the decoded form of that payload (the round
    trip is lossless), so the next turn's view does not decode what this turn just stored, and
    whatever the caller later does to its own message never reaches the history."""
    # model_dump_json's text; the serializer read from the instance (from the class, the lookup
    # goes through pydantic's metaclass __getattr__ hook, which costs more)
    payload: str = message.__pydantic_serializer__.to_json(message).decode()
    if payload not in _DECODED and type(message) in _MESSAGE_TYPES:  # a subclass decodes as its base
        _remember(payload, frozen(message))
    return payload


def decode_message(payload: str) -> Message:
    """The message stored as ``payload``. Cached (bounded, keyed by the payload text itself, so a
    different payload never meets a stale entry): a windowed view reads the same recent events
    every turn, and the decoded copy is read-only all through (its metadata too), so one copy
    serves every reader and none of them can change what the others read."""
    message = _DECODED.get(payload)
    if message is None:
        message = frozen(_adapter().validate_json(payload))
        _remember(payload, message)
    return message


def message_events(events: Iterable[SessionEvent]) -> list[SessionEvent]:
    """The ``message`` events among ``events``, in order (a window filters them every turn)."""
    return [e for e in events if e.type == "message"]


def decode_messages(events: Iterable[SessionEvent], *, filtered: bool = False) -> list[Message]:
    """The messages of the ``message`` events among ``events`` (``filtered``: all of them are),
    in order, one cache lookup each."""
    if not filtered or not isinstance(events, (list, tuple)):
        events = message_events(events)  # also makes a one-pass iterable a list (read twice below)
    known = _DECODED
    try:
        return [known[e.payload] for e in events]  # all decoded before: the usual windowed view
    except KeyError:
        return [decode_message(e.payload) for e in events]


def turn_events(turn_id: str, messages: Iterable[Message]) -> list[NewEvent]:
    """The events of a turn: ids ``turn_id:0``, ``turn_id:1`` … in the turn's order."""
    if not turn_id:
        raise ConfigurationError("A turn needs an id to be stored")
    new, suffixes = _tuple_new, _SUFFIXES  # the record straight from its values: no NamedTuple.__new__ frame
    events: list[NewEvent] = []
    add = events.append
    for n, message in enumerate(messages):  # a loop, not a comprehension: on CPython 3.11 one frame fewer
        event_id = turn_id + (suffixes[n] if n < 64 else f":{n}")
        add(new(NewEvent, (event_id, turn_id, encode_message(message), "message")))
    return events


_SUFFIXES = tuple(f":{n}" for n in range(64))  # a turn's first event ids without formatting an int each


_tuple_new = tuple.__new__
_event_id = itemgetter(0)  # NewEvent.event_id


check_session_id = check_conversation_id
"""The id if every backend can store it (non-blank, no NUL, at most 512 bytes of UTF-8)."""


def plan_append(
    session_id: str,
    events: Sequence[NewEvent],
    known: Mapping[str, str],
    current: int,
    expected_version: int | None,
) -> list[NewEvent]:
    """The events to insert, given the payloads already stored under the batch's ids (``known``).

    Replays are skipped; a batch made only of replays succeeds whatever the version (a retry of an
    append that did land). Anything new is checked against ``expected_version``.
    """
    ids = set(map(_event_id, events))
    if len(ids) == len(events) and not (known and known.keys() & ids):  # a new turn: nothing to compare
        if events and expected_version is not None and expected_version != current:
            raise VersionConflict(session_id, expected_version, current)
        return list(events)
    fresh: list[NewEvent] = []
    seen: set[str] = set()
    for event in events:
        if event.event_id in seen:
            raise IdempotencyMismatch(f"Event id {event.event_id!r} appears twice in one batch")
        seen.add(event.event_id)
        stored = known.get(event.event_id)
        if stored is None:
            fresh.append(event)
        elif stored != event.payload:
            raise IdempotencyMismatch(
                f"Event {event.event_id!r} of session {session_id!r} is already stored with another payload"
            )
    if fresh and expected_version is not None and expected_version != current:
        raise VersionConflict(session_id, expected_version, current)
    return fresh
