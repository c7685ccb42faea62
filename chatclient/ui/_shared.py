"""What both UI protocols share: approval ids that name a stored state and a call, the deny text, the
error text a browser sees, and saving a paused state with a sync or an async store."""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol, Union

from ..events import StreamEvent, TurnPaused
from ..tools.confirmation import DEFAULT_DENY_MESSAGE, PendingCall, PendingToolCalls, ToolCallDecision

__all__ = [
    "Encoder", "SaveState", "aserve", "approval_decision", "approval_id", "call_input", "error_text",
    "parse_approval_id", "saved", "serve", "sse",
]  # fmt: skip

SaveState = Callable[[PendingToolCalls], Union[str, Awaitable[str]]]  # noqa: UP007
"""Keeps a paused turn's state and returns its id: a store's ``save``, sync or async."""


def approval_id(state_id: str, call_id: str) -> str:
    """An opaque id for one paused call of the state saved under ``state_id``.

    Both parts are kept whole (base64url of a JSON pair): a store's ids and a provider's call ids may
    hold any character, so no separator could split them back unambiguously.
    """
    raw = json.dumps([state_id, call_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_approval_id(value: str) -> tuple[str, str]:
    """``(state_id, call_id)`` from :func:`approval_id`; ``ValueError`` for anything else (it comes
    from a browser, so it is checked before it reaches a store)."""
    try:
        pair = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (binascii.Error, ValueError, TypeError) as error:
        raise ValueError(f"Not an approval id: {value[:80]!r}") from error
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) and p for p in pair)):
        raise ValueError(f"Not an approval id: {value[:80]!r}")
    return pair[0], pair[1]


def approval_decision(
    call_id: str, approved: bool, reason: str | None = None, *, approver: object | None = None
) -> ToolCallDecision:
    """A person's answer from a UI as a decision; a denial's reason is what the model reads."""
    reason = (reason or "").strip() or None
    if approved:
        return ToolCallDecision.allow(call_id, approver=approver, reason=reason)
    message = f"{DEFAULT_DENY_MESSAGE} Their reason: {reason}" if reason else None
    return ToolCallDecision.deny(call_id, message, approver=approver, reason=reason)


def call_input(arguments: str) -> Any:
    """A call's arguments as JSON, or the raw text when the model wrote something else."""
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments


def awaiting(calls: tuple[PendingCall, ...]) -> list[PendingCall]:
    return [call for call in calls if call.requires_confirmation]


def error_text(error: BaseException) -> str:
    """What a browser is told when a turn fails: the kind of failure, not its details (which may hold
    prompts, keys or paths); the details go to the ``chatclient.ui`` log."""
    return f"The turn failed ({type(error).__name__})."


async def saved(save: SaveState, pending: PendingToolCalls) -> str:
    """``save(pending)``, awaited when it is async, else in a worker thread: a sync store's write (a
    SQLite file, a PostgreSQL round trip) must not stall every other stream on the event loop."""
    state_id: str = await off_the_loop(save, pending)
    return state_id


async def off_the_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: awaited when ``fn`` is a coroutine function, else run in a worker thread."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    import asyncio  # here: importing chatclient.ui stays free of asyncio for sync users

    result = await asyncio.to_thread(fn, *args)
    return await result if inspect.isawaitable(result) else result


_log = logging.getLogger("chatclient.ui")


def sse(item: Mapping[str, Any]) -> str:
    """One chunk or event as a server-sent event (both protocols send one JSON object per event)."""
    return f"data: {json.dumps(item, ensure_ascii=False, separators=(',', ':'))}\n\n"


class Encoder(Protocol):
    """What both encoders offer: the opening items, the items of one event, the items of a failure."""

    def start(self) -> list[dict[str, Any]]: ...

    def encode(self, event: StreamEvent, *, state_id: str | None = None) -> list[dict[str, Any]]: ...

    def fail(self, text: str) -> list[dict[str, Any]]: ...


def serve(
    encoder: Encoder,
    events: Iterable[StreamEvent],
    save: Callable[[PendingToolCalls], str] | None,
    on_error: Callable[[BaseException], str],
) -> Iterator[str]:
    """A turn through ``encoder`` as server-sent events: a paused state is saved first, so its ids
    can name it; a failure is the encoder's failure items (``on_error`` text), its details logged."""
    yield from map(sse, encoder.start())
    try:
        for event in events:
            state_id = save(event.pending) if save is not None and isinstance(event, TurnPaused) else None
            yield from map(sse, encoder.encode(event, state_id=state_id))
    except Exception as error:  # the browser gets the failure's kind, the log its details
        _log.exception("UI stream of a turn failed")
        yield from map(sse, encoder.fail(on_error(error)))


async def aserve(
    encoder: Encoder,
    events: AsyncIterable[StreamEvent],
    save: SaveState | None,
    on_error: Callable[[BaseException], str],
) -> AsyncIterator[str]:
    """:func:`serve` for ``astream().events()``; ``save`` may be async."""
    for item in encoder.start():
        yield sse(item)
    try:
        async for event in events:
            state_id = await saved(save, event.pending) if save is not None and isinstance(event, TurnPaused) else None
            for item in encoder.encode(event, state_id=state_id):
                yield sse(item)
    except Exception as error:
        _log.exception("UI stream of a turn failed")
        for item in encoder.fail(on_error(error)):
            yield sse(item)
