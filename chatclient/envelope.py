"""The request/response envelope that travels the advisor chain, and the keys of its context.

A request is a prompt plus a context map that advisors use to pass values along; a response is
the model's reply plus the context as it was when the reply came back. Both sit below the model
SPI, the stream events and the advisor SPI, which all carry them; :mod:`chatclient.advisor`
re-exports them, and so does the package root. The context keys are plain strings, defined with
no dependency at all (``chatclient._context_keys``) so that any layer may read a context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._context_keys import CONVERSATION_ID, ContextKeys, check_conversation_id  # re-exported
from ._redact import redact_mapping
from ._trusted import fast_frozen
from .prompt import Prompt
from .responses import ChatResponse

if TYPE_CHECKING:
    from .tools.confirmation import PendingToolCalls

__all__ = ["CONVERSATION_ID", "ChatClientRequest", "ChatClientResponse", "ContextKeys", "check_conversation_id"]


@fast_frozen  # made for every request and round
@dataclass(frozen=True, slots=True, repr=False)
class ChatClientRequest:
    """The prompt plus a context map that advisors use to pass values along the chain.

    Both are immutable: use ``with_prompt``/``with_context`` to make the request for ``next_``.
    """

    prompt: Prompt
    context: Mapping[str, Any] = field(default_factory=dict)

    def with_prompt(self, prompt: Prompt) -> ChatClientRequest:
        return self if prompt is self.prompt else ChatClientRequest(prompt, self.context)

    def with_context(self, updates: Mapping[str, Any] | None = None, /, **values: Any) -> ChatClientRequest:
        return ChatClientRequest(self.prompt, {**self.context, **(updates or {}), **values})

    def __repr__(self) -> str:
        """The dataclass repr, but the context (advisor params an application chose) shown with
        credential-looking values masked, as the prompt's options are."""
        return f"ChatClientRequest(prompt={self.prompt!r}, context={redact_mapping(self.context)!r})"


@fast_frozen
@dataclass(frozen=True, slots=True)
class ChatClientResponse:
    """The model's reply plus the context as it was when the reply came back."""

    chat_response: ChatResponse | None
    context: Mapping[str, Any] = field(default_factory=dict)

    def with_chat_response(self, chat_response: ChatResponse | None) -> ChatClientResponse:
        return ChatClientResponse(chat_response, self.context)

    def with_context(self, updates: Mapping[str, Any] | None = None, /, **values: Any) -> ChatClientResponse:
        return ChatClientResponse(self.chat_response, {**self.context, **(updates or {}), **values})

    @property
    def text(self) -> str | None:
        """The text of the reply (``None`` when it has none, e.g. a turn paused for confirmation)."""
        chat = self.chat_response
        return chat.text if chat is not None else None

    @property
    def is_paused(self) -> bool:
        """True when the turn paused for a person's decision (see ``awaiting_decision``)."""
        return self.context.get(ContextKeys.PENDING_TOOL_CALLS) is not None

    def __repr__(self) -> str:
        pending = self._pending()
        if pending is not None:
            return f"ChatClientResponse(paused, awaiting={pending.awaiting_ids})"
        chat = self.chat_response
        return f"ChatClientResponse({chat!r}, context_keys={len(self.context)})"

    def _repr_markdown_(self) -> str:
        """A notebook shows the answer, or the table of calls a paused turn waits for."""
        pending = self._pending()
        if pending is not None:
            return pending._repr_markdown_()
        chat = self.chat_response
        return chat._repr_markdown_() if chat is not None else "*(no reply)*"

    def _repr_html_(self) -> str:
        pending = self._pending()
        if pending is not None:
            return pending._repr_html_()
        chat = self.chat_response
        return chat._repr_html_() if chat is not None else "<em>(no reply)</em>"

    def _pending(self) -> PendingToolCalls | None:
        pending: PendingToolCalls | None = self.context.get(ContextKeys.PENDING_TOOL_CALLS)
        return pending
