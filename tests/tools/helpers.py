"""Hand-built prompts and replies for driving a ToolCallingManager without a model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatclient.messages import AssistantMessage, Message, ToolCall, UserMessage
from chatclient.options import ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from chatclient.tools import ToolLike, resolve_tools


def call(name: str, arguments: str = "{}", id: str | None = None) -> ToolCall:
    return ToolCall(id=id or f"call_{name}", name=name, arguments=arguments)


def reply(*calls: ToolCall) -> ChatResponse:
    return ChatResponse.of(AssistantMessage(None, tool_calls=list(calls)))


def prompt(
    tools: Iterable[ToolLike] = (),
    *,
    context: Mapping[str, Any] | None = None,
    history: Sequence[Message] = (UserMessage("hi"),),
) -> Prompt:
    options = ToolCallingChatOptions(tool_callbacks=resolve_tools(tools), tool_context=dict(context or {}))
    return Prompt(list(history), options)
