"""A paused turn belongs to its conversation: the memory advisor binds the pending state to the
conversation id when the turn pauses (a resume is checked against it before anything runs, by
:func:`chatclient.tools.resume.bind_resume`)."""

from __future__ import annotations

from ..envelope import ChatClientResponse, ContextKeys
from ..events import StreamEvent, TurnPaused
from ..responses import ChatResponse
from ..tools.confirmation import PENDING_METADATA_KEY, PendingToolCalls

__all__ = ["paused_in", "paused_event_in"]


def paused_in(response: ChatClientResponse, conversation_id: str) -> ChatClientResponse:
    """``response`` with its pending state bound to ``conversation_id`` (context and metadata)."""
    pending = response.context.get(ContextKeys.PENDING_TOOL_CALLS)
    if not isinstance(pending, PendingToolCalls) or pending.conversation_id == conversation_id:
        return response
    bound = pending.in_conversation(conversation_id)
    chat = response.chat_response
    if chat is not None and PENDING_METADATA_KEY in chat.metadata.extra:
        extra = {**chat.metadata.extra, PENDING_METADATA_KEY: bound.model_dump(mode="json")}
        metadata = chat.metadata.model_copy(update={"extra": extra})
        response = response.with_chat_response(ChatResponse(chat.generations, metadata))
    return response.with_context({ContextKeys.PENDING_TOOL_CALLS: bound})


def paused_event_in(event: StreamEvent, conversation_id: str) -> StreamEvent:
    """A streamed ``TurnPaused`` with its state bound as :func:`paused_in` binds the final one."""
    if isinstance(event, TurnPaused) and event.pending.conversation_id != conversation_id:
        return TurnPaused(event.pending.in_conversation(conversation_id))
    return event
