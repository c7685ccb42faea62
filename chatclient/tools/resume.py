"""What a resume checks about its tools before anything of the paused reply runs.

A person approved a call to a tool as it was at the pause. Two things can make the resume run
something else, or nothing: a remote source that changed the tool without telling anyone (its
provider's cached listing is stale), and a resume that forgot the request-scoped tools the paused
turn had (the approved call would become an "unknown tool" result). The first is met by asking each
provider that can for a listing past its cache (:func:`fresh_sources`); the second by refusing the
resume (:func:`check_decided_tools_present`). And a state paused in a conversation (under a memory
advisor) resumes in that conversation only (:func:`bind_resume`).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .._context_keys import CONVERSATION_ID
from ..errors import PendingConversationMismatchError, ToolCallDecisionError
from .callback import ToolCallback, ToolCallbackProvider

if TYPE_CHECKING:
    from .confirmation import PendingToolCalls, ToolCallDecision, ToolCallDecisions

__all__ = ["bind_conversation", "bind_resume", "check_decided_tools_present", "fresh_sources"]


class _FreshListing:
    """A provider seen through its fresh listing: ``fresh_tool_callbacks()`` (sync or async) as its
    ``tool_callbacks``, and ``get_fresh_tool_callbacks()``, when it has one, as its sync twin."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tool_callbacks = provider.fresh_tool_callbacks
        sync_twin = getattr(provider, "get_fresh_tool_callbacks", None)
        if callable(sync_twin):
            self.get_tool_callbacks = sync_twin

    def __repr__(self) -> str:
        return f"{type(self.provider).__qualname__} (fresh listing)"


def fresh_sources(providers: Sequence[ToolCallbackProvider]) -> tuple[ToolCallbackProvider, ...]:
    """``providers`` for a resume: those that offer ``fresh_tool_callbacks()`` (a listing past their
    cache, e.g. an MCP server's) are asked for it instead, so the paused calls' tool identities are
    checked against what the source serves now; the others are asked as on any request."""
    return tuple(
        cast(ToolCallbackProvider, _FreshListing(p)) if callable(getattr(p, "fresh_tool_callbacks", None)) else p
        for p in providers
    )


def check_decided_tools_present(
    pending: PendingToolCalls, decisions: ToolCallDecisions, callbacks: Sequence[ToolCallback]
) -> None:
    """Refuse a resume whose tools lack one that a paused call needs a person's allow to run.

    A gated call had its tool at the pause (only a known tool is gated), so a missing tool means the
    resume was not given the tools the turn had, typically request-scoped ones (``spec.tools(...)``).
    Without this the approved call would silently turn into an "unknown tool" result. Denied calls
    need no tool: the model reads the denial.
    """
    names = {callback.name for callback in callbacks}
    missing = [
        call.name
        for call in pending.calls
        if call.requires_confirmation and call.name not in names and _may_run(decisions.get(call.id))
    ]
    if missing:
        raise ToolCallDecisionError(
            f"The paused call(s) to {sorted(set(missing))} cannot run: the resumed request has no such tool. "
            "Pass the same tools on resume as the paused request had (e.g. .tools(...) again); nothing ran"
        )


def _may_run(decision: ToolCallDecision | None) -> bool:
    """An allow, or no decision (a completeness policy may still run or refuse it)."""
    return decision is None or decision.allowed


def bind_resume(context: MutableMapping[str, Any], pending: PendingToolCalls) -> None:
    """A resume runs in the conversation its state paused in: named by the request, or taken from
    the state when the request names none; another id is refused before anything runs."""
    if pending.conversation_id:  # else paused without memory, or sealed before states carried their conversation
        bind_conversation(context, pending.conversation_id)


def bind_conversation(context: MutableMapping[str, Any], paused: str) -> None:
    """:func:`bind_resume` for a conversation id (a continued turn's too)."""
    requested = context.get(CONVERSATION_ID)
    if requested is None:
        context[CONVERSATION_ID] = paused
    elif requested != paused:
        raise PendingConversationMismatchError(paused, str(requested))
