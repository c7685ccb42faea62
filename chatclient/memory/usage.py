"""A conversation's usage, kept in its own log: one ``usage`` event per stored turn.

The memory advisor appends it with the turn's messages, in the same atomic batch, under the id
``f"{turn_id}:usage"``, so a replayed append adds nothing and nothing already stored is rewritten.
A paused turn stores nothing; its resume stores the whole turn with the usage of all its rounds,
so a paused and resumed turn counts once. Message readers skip these events (``messages_of``
reads ``type == "message"`` only). Turns stored before this existed, or whose provider reported
no usage, count as turns without usage.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, Iterator
from operator import itemgetter

from ..responses import ChatResponse, Usage
from ..usage import UsageTotals, totals_of
from .log import NewEvent, SessionEvent
from .repository import AsyncSessionRepository, SessionRepository, in_thread

__all__ = ["USAGE_EVENT", "asession_usage", "session_usage", "usage_event", "usage_records"]

USAGE_EVENT = "usage"
"""The ``type`` of a turn's usage event; its payload is ``{"model": ..., <Usage fields>}``."""


_ENCODER = json.JSONEncoder(sort_keys=True)
"""``json.dumps(..., sort_keys=True)`` without building an encoder per call (the same text)."""

_TOKENS = ("cache_read_tokens", "cache_write_tokens", "completion_tokens", "prompt_tokens", "reasoning_tokens")
_FAST = tuple(sorted(Usage.model_fields)) == _TOKENS  # the f-string below writes exactly these fields, sorted
_counts = itemgetter(*_TOKENS)


def _payload(model: str | None, usage: Usage) -> str:
    """The usage payload: ``json.dumps({"model": model, **usage}, sort_keys=True)``, the text a
    replayed append compares byte for byte; written by an f-string when it is only ints and a
    string (a turn's usual case), without the JSON encoder's walk or a format string to parse.
    ``n or "0"`` writes a zero (most turns have three: no cache, no reasoning) without converting it."""
    if not _FAST:  # Usage's fields changed: the encoder writes whatever they are
        return _ENCODER.encode({"model": model, **usage.__dict__})
    read, write, completion, prompt, reasoning = _counts(usage.__dict__)  # Usage's fields: plain ints
    if type(read) is type(write) is type(completion) is type(prompt) is type(reasoning) is int and (
        model is None or type(model) is str
    ):
        name = "null" if model is None else _QUOTED.get(model) or _quote(model)
        return (
            f'{{"cache_read_tokens": {read or "0"}, "cache_write_tokens": {write or "0"}, '
            f'"completion_tokens": {completion or "0"}, "model": {name}, '
            f'"prompt_tokens": {prompt or "0"}, "reasoning_tokens": {reasoning or "0"}}}'
        )
    return _ENCODER.encode({"model": model, **usage.__dict__})


_quoted = json.encoder.encode_basestring_ascii  # how json.dumps writes a string (ensure_ascii)
_QUOTED: dict[str, str] = {}
"""Model names as JSON strings (a conversation names the same few models turn after turn)."""


def _quote(model: str) -> str:
    if len(_QUOTED) >= 256:
        _QUOTED.clear()
    quoted = _QUOTED[model] = _quoted(model)
    return quoted


def usage_event(turn_id: str, chat: ChatResponse | None) -> NewEvent | None:
    """The usage event of a turn whose final reply is ``chat``; ``None`` when it reported no usage."""
    if chat is None:
        return None
    metadata = chat.metadata
    usage = metadata.usage
    if usage is None:
        return None
    return _tuple_new(NewEvent, (turn_id + ":usage", turn_id, _payload(metadata.model, usage), USAGE_EVENT))


_tuple_new = tuple.__new__  # the record straight from its values (no NamedTuple.__new__ frame)


def usage_records(events: Iterable[SessionEvent]) -> Iterator[tuple[Usage, str | None]]:
    """``(usage, model)`` of each usage event, in log order."""
    for event in events:
        if event.type == USAGE_EVENT:
            data = json.loads(event.payload)
            model = data.pop("model", None)
            yield Usage(**data), model


def session_usage(repository: SessionRepository, session_id: str) -> UsageTotals:
    """The usage of every turn stored in the session (``calls`` counts the turns that reported usage)."""
    return totals_of(usage_records(repository.events(session_id)))


async def asession_usage(repository: SessionRepository | AsyncSessionRepository, session_id: str) -> UsageTotals:
    """:func:`session_usage` for an async repository (a sync one is read off the event loop)."""
    if inspect.iscoroutinefunction(repository.events):
        events = await repository.events(session_id)
    else:
        sync: SessionRepository = repository  # type: ignore[assignment]
        events = await in_thread(lambda: sync.events(session_id))
    return totals_of(usage_records(events))
