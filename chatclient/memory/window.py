"""Views of a session log: the messages a model sees, cut only where a turn begins.

A turn is appended whole, so its events are contiguous; a window that starts at a turn's first
event can never begin with a tool result nor leave a tool call without its result.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import AssistantMessage, Message, ToolResponseMessage
from .log import SessionEvent

__all__ = ["messages_of", "read_size", "window"]


def read_size(messages: int | None) -> int | None:
    """How many events to read for a window of ``messages`` messages: a turn's usage event follows
    at least two messages, so twice as many events always hold them (``window`` trims the rest)."""
    return None if messages is None else 2 * messages


def window(events: Sequence[SessionEvent], messages: int | None = None) -> list[SessionEvent]:
    """The events from the first turn start on (a window read with ``last=N`` may begin mid-turn);
    with ``messages``, only the last that many message events are kept before cutting, so events
    of other types (a turn's usage) never take a message's place in the window."""
    if messages is not None:
        kept = [e for e in events if e.type == "message"]
        events = kept[-messages:] if len(kept) > messages else kept
    for index, event in enumerate(events):
        if event.starts_turn:
            return list(events[index:])
    return []


def messages_of(events: Sequence[SessionEvent]) -> list[Message]:
    """The messages of a view, with any tool call left unanswered at its end dropped (defensive:
    an advisor never stores one, but an imported log might hold it)."""
    messages = [e.message() for e in events if e.type == "message"]
    while messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        messages.pop()
    while messages and isinstance(messages[0], ToolResponseMessage):
        messages.pop(0)
    return messages
