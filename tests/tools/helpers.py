"""Hand-built prompts and replies for driving a ToolCallingManager without a model."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chatclient.messages import AssistantMessage, Message, ToolCall, UserMessage
from chatclient.options import ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from chatclient.tools import ToolLike, resolve_tools

if TYPE_CHECKING:
    from chatclient.client import ChatClientRequestSpec

GUARD = 60.0
"""Seconds a wait may take before the test fails: a guard against a hang, never a measure."""


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


class Discards(logging.Handler):
    """Counts the "result is discarded" records of ``chatclient.tools`` (a late tool result)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.messages: list[str] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        if "its result is discarded" in record.getMessage():
            with self.changed:
                self.count += 1
                self.messages.append(record.getMessage())
                self.changed.notify_all()

    def wait_for(self, n: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= n, GUARD)


async def ask(spec: ChatClientRequestSpec, mode: str) -> str:
    """The answer's text in one of the four modes, from async code (the sync modes in a thread)."""
    if mode == "call":
        return await asyncio.to_thread(lambda: spec.call().content() or "")
    if mode == "stream":
        return await asyncio.to_thread(lambda: "".join(spec.stream().content()))
    if mode == "acall":
        return await spec.acall().content() or ""
    return "".join([chunk async for chunk in spec.astream().content()])
