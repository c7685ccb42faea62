"""The well-known keys of the request/response context: plain strings, importable from any layer.

The envelope (:mod:`chatclient.envelope`) carries the context; the keys are here, below every type,
so that a value module (a paused turn's ``awaiting_decision``, memory's log, tracing) reads a
context without loading the envelope. ``ContextKeys`` is public through ``chatclient.envelope``,
``chatclient.advisor`` and the package root.
"""

from __future__ import annotations

from typing import Final

from ._keys import key_check

__all__ = ["CONVERSATION_ID", "ContextKeys", "check_conversation_id"]


class ContextKeys:
    """Well-known keys of the request/response context."""

    TOOL_CALLING_AUTO_REGISTER: Final = "chatclient.tool_calling.auto_register"
    """Set to ``False`` (``.advisors(params={...})``) to run without the auto-registered tool loop."""
    OUTPUT_FORMAT: Final = "chatclient.output.format"
    """Format instructions appended to the last user message by the model call (``entity()``)."""
    OUTPUT_SCHEMA: Final = "chatclient.output.schema"
    """JSON schema for native structured output (``entity(..., native=True)``). When the model
    supports it, the model call sets ``options.output_schema`` instead of adding instructions."""
    PENDING_TOOL_CALLS: Final = "chatclient.tool_loop.pending"
    """On the response: the ``PendingToolCalls`` when the turn paused for confirmation. Nothing of the
    paused reply has run; advisors outside the loop (memory) should not store the turn yet."""
    RESUME: Final = "chatclient.tool_loop.resume"
    """On the request: ``(PendingToolCalls, ToolCallDecisions)`` set by ``resume(...)``; the loop runs
    the decided calls first, then goes on to the answer."""
    RESUME_USER: Final = "chatclient.tool_loop.resume_user"
    """On the request: the person's words given with a resume (``resume(..., user=...)``), added as a
    user message after the decided calls' results, in the same turn."""
    APPROVALS: Final = "chatclient.tool_loop.approvals"
    """On the request: the ``Approvals`` (standing rules, conversation rules, an approval handler)
    that decide gated calls without a pause; set only when some are configured."""
    USAGE_BUDGET: Final = "chatclient.tool_loop.usage_budget"
    """On the request: the ``UsageBudget`` (``spec.usage_limits(...)``) checked before each model round."""
    CONVERSATION_USAGE: Final = "chatclient.memory.conversation_usage"
    """On the request: ``(model requests, Usage)`` of the conversation's stored turns, set by a memory
    advisor when a per-conversation budget is to be checked."""
    TURN: Final = "chatclient.turn"
    """On the response: the :class:`~chatclient.turn.Turn` (id and messages); read it with
    ``turn_messages(response)``."""
    TURN_ID: Final = "chatclient.turn.id"
    """On the request: the id to give the turn instead of a new random one (memory may set it)."""
    TURN_JOURNALS: Final = "chatclient.memory.turn_journals"
    """On the request: the conversation's ``TurnJournals`` (set by a memory advisor when the request
    has tools): the tool loop records a turn's tool rounds there before its next model round."""
    TOOL_LOOP_EXTENSIONS: Final = "chatclient.tool_loop.extensions"
    """On the request: extra ``ToolLoopExtension``s for this request's tool loop."""
    OBSERVERS: Final = "chatclient.observers"
    """On the request: the ``Observers`` of this request (instrumentation)."""
    CONVERSATION_ID: Final = "chatclient.memory.conversation_id"
    """On the request: the conversation it belongs to (``spec.conversation(id)``); memory advisors load
    and store its history under this id, tracing reports it, a resume is checked against it."""


CONVERSATION_ID: Final = ContextKeys.CONVERSATION_ID
"""The context key of the conversation id (also ``chatclient.memory.CONVERSATION_ID``)."""

check_conversation_id = key_check("A conversation id")
"""The id if every memory backend can store it (non-blank, no NUL, at most 512 bytes of UTF-8)."""
