"""``Prompt``: the messages and options of one model request."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from .messages import Message, SystemMessage, UserMessage
from .options import ChatOptions, ToolCallingChatOptions
from .tools.callback import ToolCallback

__all__ = ["Prompt"]


class Prompt(BaseModel):
    """Messages plus options. ``Prompt("hi")`` is one user message."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    messages: tuple[Message, ...]
    options: ChatOptions | None = None
    """Serialized as the common ``ChatOptions`` fields: live tools and provider-only fields are not
    part of a stored conversation."""

    def __init__(
        self,
        messages: str | Message | Sequence[Message],
        options: ChatOptions | None = None,
    ) -> None:
        if isinstance(messages, str):
            messages = (UserMessage(messages),)
        elif not isinstance(messages, Sequence):
            messages = (messages,)
        super().__init__(messages=tuple(messages), options=options)

    def with_messages(self, messages: Sequence[Message]) -> "Prompt":
        # Both parts are already validated; skipping validation keeps the tool loop's rounds cheap.
        if messages is self.messages:
            return self  # frozen: a round over the same messages needs no copy (fewer objects per call)
        return Prompt.model_construct(messages=tuple(messages), options=self.options)

    def with_options(self, options: ChatOptions | None) -> "Prompt":
        return Prompt.model_construct(messages=self.messages, options=options)

    @property
    def system_message(self) -> SystemMessage | None:
        for message in self.messages:
            if isinstance(message, SystemMessage):
                return message
        return None

    @property
    def last_user_message(self) -> UserMessage | None:
        for message in reversed(self.messages):
            if isinstance(message, UserMessage):
                return message
        return None

    @property
    def tool_callbacks(self) -> tuple[ToolCallback, ...]:
        """The tools of this request (empty when the options carry none)."""
        options = self.options
        return options.tool_callbacks if isinstance(options, ToolCallingChatOptions) else ()
