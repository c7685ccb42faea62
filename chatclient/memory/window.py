"""Views of a session log: the messages a model sees, cut only where a turn begins.

A turn is appended whole, so its events are contiguous; a window that starts at a turn's first
event can never begin with a tool result nor leave a tool call without its result.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import AssistantMessage, Message, ToolResponseMessage
from .log import SessionEvent, decode_messages, message_events

__all__ = ["messages_of", "read_size", "window", "window_messages"]


def read_size(messages: int | None) -> int | None:
    """How many events to read for a window of ``messages`` messages: a turn's usage event follows
    at least two messages, so twice as many events always hold them (``window`` trims the rest)."""
    return None if messages is None else 2 * messages


def window(events: Sequence[SessionEvent], messages: int | None = None) -> list[SessionEvent]:
    """The events from the first turn start on (a window read with ``last=N`` may begin mid-turn);
    with ``messages``, only the last that many message events are kept before cutting, so events
    of other types (a turn's usage) never take a message's place in the window."""
    fresh = messages is not None
    if messages is not None:
        kept = message_events(events)
        events = kept[-messages:] if len(kept) > messages else kept  # a new list: no copy needed
    for index, event in enumerate(events):
        if event.starts_turn:
            return events if fresh and not index else list(events[index:])  # type: ignore[return-value]
    return []


def window_messages(events: Sequence[SessionEvent], messages: int | None = None) -> list[Message]:
    """``messages_of(window(events, messages))``, filtering the events once (the advisor's view)."""
    if messages is None:
        return messages_of(window(events))
    return _answered(decode_messages(window(events, messages), filtered=True))


def messages_of(events: Sequence[SessionEvent]) -> list[Message]:
    """The messages of a view, with any tool call left unanswered at its end dropped (defensive:
    an advisor never stores one, but an imported log might hold it)."""
    return _answered(decode_messages(events))


def _answered(messages: list[Message]) -> list[Message]:
    while messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        messages.pop()
    while messages and isinstance(messages[0], ToolResponseMessage):
        messages.pop(0)
    return messages
