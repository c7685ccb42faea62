"""The models every call and reply builds, each by a builder made from its fields (``_trusted.builder_for``).

A call builds eight models: the request's ``UserMessage`` and ``Prompt``, the reply's
``AssistantMessage``, ``Generation`` (and its ``GenerationMetadata``, shared for the common finish
reasons: ``responses.shared_generation_metadata``), ``Usage``, ``ChatResponseMetadata`` and
``ChatResponse``; a tool round adds a ``ToolResponse`` per call, their ``ToolResponseMessage`` and
the next round's ``Prompt``. A builder is one call whose signature is the check, so each takes every
field as a keyword argument: ``usage(prompt_tokens=..., completion_tokens=..., ...)``. The values
must already be of their fields' types (the callers check what the wire could get wrong).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._trusted import builder_for
from .messages import AssistantMessage, ToolCall, ToolResponse, ToolResponseMessage, UserMessage, distinct_call_ids
from .prompt import Prompt
from .responses import ChatResponse, ChatResponseMetadata, Generation, GenerationMetadata, Usage

__all__ = [
    "assistant_message",
    "chat_response",
    "generation",
    "generation_metadata",
    "prompt",
    "response_metadata",
    "tool_response",
    "tool_response_message",
    "usage",
    "user_message",
]

usage: Callable[..., Usage] = builder_for(Usage)
_assistant_message: Callable[..., AssistantMessage] = builder_for(AssistantMessage)


def assistant_message(*, role: Any, text: Any, tool_calls: tuple[ToolCall, ...], metadata: Any) -> AssistantMessage:
    """As ``AssistantMessage``'s own ``__init__``: every call of a reply gets an id of its own."""
    if tool_calls:
        tool_calls = distinct_call_ids(tool_calls)
    return _assistant_message(role=role, text=text, tool_calls=tool_calls, metadata=metadata)


generation_metadata: Callable[..., GenerationMetadata] = builder_for(GenerationMetadata)
generation: Callable[..., Generation] = builder_for(Generation)
response_metadata: Callable[..., ChatResponseMetadata] = builder_for(ChatResponseMetadata)
chat_response: Callable[..., ChatResponse] = builder_for(ChatResponse)
user_message: Callable[..., UserMessage] = builder_for(UserMessage)
prompt: Callable[..., Prompt] = builder_for(Prompt)
tool_response: Callable[..., ToolResponse] = builder_for(ToolResponse)
tool_response_message: Callable[..., ToolResponseMessage] = builder_for(ToolResponseMessage)
