"""Messages of a conversation: frozen pydantic models that round-trip through JSON unchanged.

A conversation is a sequence of :data:`Message` values. The ``role`` field is the discriminator,
so ``TypeAdapter(list[Message]).validate_json(...)`` rebuilds the exact classes.

The constructors take the main field positionally (``UserMessage("hi")``); pydantic also calls
them when validating, so each accepts every field as a keyword.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _meta(metadata: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
    return dict(metadata) if metadata else {}


class SystemMessage(BaseModel):
    """Instructions for the model; a provider may send it outside the message list."""

    model_config = _FROZEN
    role: Literal["system"] = "system"
    text: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self, text: str, *, metadata: Mapping[str, JsonValue] | None = None, role: Literal["system"] = "system"
    ) -> None:
        super().__init__(text=text, metadata=_meta(metadata), role=role)


class UserMessage(BaseModel):
    """What the user said. A new ``UserMessage`` starts a new *turn* (tool-call limits count per turn)."""

    model_config = _FROZEN
    role: Literal["user"] = "user"
    text: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self, text: str, *, metadata: Mapping[str, JsonValue] | None = None, role: Literal["user"] = "user"
    ) -> None:
        super().__init__(text=text, metadata=_meta(metadata), role=role)


class ToolCall(BaseModel):
    """One call the model asked for.

    ``arguments`` is the raw JSON string exactly as the model produced it: it is parsed and validated
    only when the tool runs, so malformed output is reported to the model instead of lost.
    In a *stream chunk*, a ``ToolCall`` is a fragment: fragments with the same ``id`` are joined by
    concatenating their ``arguments`` (see :class:`chatclient.streaming.ChatResponseAccumulator`).
    """

    model_config = _FROZEN
    id: str
    type: str = "function"
    name: str = ""
    arguments: str = ""


class AssistantMessage(BaseModel):
    """The model's reply: text, tool calls, or both."""

    model_config = _FROZEN
    role: Literal["assistant"] = "assistant"
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self,
        text: str | None = None,
        *,
        tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
        metadata: Mapping[str, JsonValue] | None = None,
        role: Literal["assistant"] = "assistant",
    ) -> None:
        super().__init__(text=text, tool_calls=tuple(tool_calls), metadata=_meta(metadata), role=role)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


class ToolResponse(BaseModel):
    """The result of one tool call, sent back to the model under the call's ``id``.

    ``is_error`` marks results that report a failure (bad arguments, unknown tool, a tool that raised)
    so providers that support it (Anthropic's ``is_error``) can say so, and advisors can tell.
    """

    model_config = _FROZEN
    id: str
    name: str
    response_data: str
    is_error: bool = False
    metadata: dict[str, JsonValue] = Field(default_factory=dict)


class ToolResponseMessage(BaseModel):
    """All tool results of one model reply, in the reply's order."""

    model_config = _FROZEN
    role: Literal["tool"] = "tool"
    responses: tuple[ToolResponse, ...]
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self,
        responses: tuple[ToolResponse, ...] | list[ToolResponse],
        *,
        metadata: Mapping[str, JsonValue] | None = None,
        role: Literal["tool"] = "tool",
    ) -> None:
        super().__init__(responses=tuple(responses), metadata=_meta(metadata), role=role)


Message = Annotated[
    Union[SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage],  # noqa: UP007
    Field(discriminator="role"),
]
"""Any message of a conversation (a discriminated union on ``role``)."""
