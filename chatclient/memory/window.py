"""Views of a session log: the messages a model sees, cut only where a turn begins.

A turn is appended whole, so its events are contiguous; a window that starts at a turn's first
event can never begin with a tool result nor leave a tool call without its result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..messages import AssistantMessage, Message, ToolResponseMessage
from .log import _DECODED, SessionEvent, decode_message, decode_messages, message_events

__all__ = ["WindowViews", "messages_of", "read_size", "window", "window_messages"]


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


def _answered_view(messages: list[Message]) -> Sequence[Message]:
    """``_answered(list(messages))`` without the copy when nothing is to be dropped (the usual
    view); the caller only reads it (the advisor unpacks it into the turn's prompt)."""
    if not messages:
        return messages
    last = messages[-1]
    if (isinstance(last, AssistantMessage) and last.tool_calls) or isinstance(messages[0], ToolResponseMessage):
        return _answered(list(messages))
    return messages


def _answered(messages: list[Message]) -> list[Message]:
    while messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        messages.pop()
    while messages and isinstance(messages[0], ToolResponseMessage):
        messages.pop(0)
    return messages


_View = tuple[SessionEvent, list[SessionEvent], list[Message]]
"""A conversation's kept view, as a plain tuple (built every turn; a named tuple costs a
``tuple.__new__`` call more): the last event of the read it came from (held, so its identity stays
unique), ``window(read, messages)`` (message events from a turn's start), and their decoded
messages, one for one."""


class WindowViews:
    """``window_messages(read, messages)`` per conversation, carried forward from the last read.

    A conversation's next read is the last one plus the turns stored since. When the new read holds
    the previous read's last event (the very object: the in-memory store and SQLite's cached tail
    hand out the stored events themselves), only the events after it are filtered and decoded; the
    rest of the view is the previous one, trimmed. Events never change once stored and ``seq`` is
    gap-free, so that identity and position prove the reads are of one log; anything else (another
    store, a deleted and re-created session, a read that does not reach back) is computed afresh.
    """

    def __init__(self, messages: int, conversations: int = 1024) -> None:
        self.messages = messages
        self._views: dict[str, _View] = {}
        self._conversations = conversations
        self._lock = threading.Lock()

    def of(self, conversation_id: str, read: Sequence[SessionEvent]) -> Sequence[Message]:
        """The view's messages, to be read only (they may be the view kept for the next turn)."""
        if not read:
            return []
        last = read[-1]
        view = self._views.get(conversation_id)
        if view is not None:
            seen = view[0]
            at = len(read) - 1 - (last.seq - seen.seq)  # where the previous last event must be
            if 0 <= at < len(read) and read[at] is seen:
                if at == len(read) - 1:
                    return _answered_view(view[2])  # nothing stored since
                return self._carried(conversation_id, view, read, at, last)
        events = window(read, self.messages)
        messages = decode_messages(events, filtered=True)
        self._remember(conversation_id, (last, events, messages))
        return _answered_view(messages)

    def _carried(
        self, conversation_id: str, view: _View, read: Sequence[SessionEvent], at: int, last: SessionEvent
    ) -> list[Message]:
        """The view after the events ``read[at + 1:]``: the last ``messages`` of old + new message
        events, from a turn's start. The old view began at the first turn start of its last ``messages``
        message events, so there is no turn start between that point and its own start: cutting the
        joined list gives the same view."""
        new_events: list[SessionEvent] = []
        new_messages: list[Message] = []
        known = _DECODED
        for event in read[at + 1 :]:  # a turn or two: filtered and decoded in this frame
            if event.type == "message":
                new_events.append(event)
                new_messages.append(known.get(event.payload) or decode_message(event.payload))
        _, old_events, old_messages = view
        events, messages = old_events + new_events, old_messages + new_messages
        size = self.messages
        if len(events) > size:
            del events[:-size], messages[:-size]
        for index, event in enumerate(events):
            if event.event_id == event.turn_id + ":0":  # event.starts_turn, without its frame
                if index:
                    del events[:index], messages[:index]
                break
        else:
            events, messages = [], []
        # A known conversation, replaced in place (one atomic store; had another thread evicted it
        # meanwhile, the bound is one over until the next new conversation trims it).
        self._views[conversation_id] = (last, events, messages)
        if messages and (
            isinstance(messages[0], ToolResponseMessage)
            or (isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls)
        ):
            return _answered(list(messages))  # _answered_view(), inline
        return messages

    def _remember(self, conversation_id: str, view: _View) -> None:
        views = self._views
        with self._lock:
            while len(views) >= self._conversations:  # the first remembered goes first
                del views[next(iter(views))]
            views[conversation_id] = view
