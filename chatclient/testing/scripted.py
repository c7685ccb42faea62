"""``ScriptedChatModel``: a model that replies from a script, for tests and offline examples."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Union

from ..errors import ScriptExhaustedError
from ..messages import AssistantMessage, ToolCall
from ..model import ChatModel
from ..options import ChatOptions
from ..prompt import Prompt
from ..responses import (
    ChatResponse,
    ChatResponseMetadata,
    FinishReason,
    Generation,
    GenerationMetadata,
    Usage,
)

__all__ = ["ScriptItem", "ScriptedChatModel", "tool_call"]

ScriptItem = Union[ChatResponse, AssistantMessage, str, BaseException]  # noqa: UP007
"""A reply: a full ``ChatResponse``, an ``AssistantMessage``, a text, or an exception to raise."""

_ids = itertools.count(1)


def tool_call(name: str, arguments: Mapping[str, Any] | str = "", *, id: str | None = None) -> ToolCall:
    """A ``ToolCall`` for scripts: ``arguments`` may be a dict (dumped to JSON) or a raw string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(id=id or f"call_{next(_ids)}", name=name, arguments=raw)


class ScriptedChatModel(ChatModel):
    """Replies with the next item of ``script``, or with ``script(prompt)`` when it is a function.

    Every prompt it receives is recorded in ``prompts``. ``stream``/``astream`` split each reply
    like a real provider does: text into deltas of ``text_chunk_size`` characters, each tool call's
    arguments into ``argument_chunks`` fragments keyed by the call id, then a last chunk with the
    finish reason and usage.
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | Callable[[Prompt], ScriptItem],
        *,
        usage: Usage | None = None,
        text_chunk_size: int = 4,
        argument_chunks: int = 3,
        model: str = "scripted",
        delay: float = 0.0,
        default_options: ChatOptions | None = None,
    ) -> None:
        self._script = script if callable(script) else list(script)
        self._next = 0
        self._lock = threading.Lock()
        self._usage = usage
        self._text_chunk_size = max(1, text_chunk_size)
        self._argument_chunks = max(1, argument_chunks)
        self._model = model
        self._delay = delay
        self.prompts: list[Prompt] = []
        self._default_options = default_options

    @property
    def default_options(self) -> ChatOptions | None:
        return self._default_options

    @property
    def calls(self) -> int:
        return len(self.prompts)

    @property
    def remaining(self) -> int:
        """Replies left in a list script (0 for a function script)."""
        return 0 if callable(self._script) else len(self._script) - self._next

    def _reply(self, prompt: Prompt) -> ChatResponse:
        with self._lock:
            self.prompts.append(prompt)
            if callable(self._script):
                item = self._script(prompt)
            else:
                if self._next >= len(self._script):
                    raise ScriptExhaustedError(
                        f"ScriptedChatModel was called {self._next + 1} times but scripted "
                        f"{len(self._script)} replies; last prompt: {prompt.messages[-1]!r}"
                    )
                item = self._script[self._next]
                self._next += 1
        if isinstance(item, BaseException):
            raise item
        return self._response(item)

    def _response(self, item: ChatResponse | AssistantMessage | str) -> ChatResponse:
        if isinstance(item, ChatResponse):
            if item.metadata.usage is None and self._usage is not None:
                return item.with_metadata(usage=self._usage)
            return item
        message = AssistantMessage(item) if isinstance(item, str) else item
        reason = FinishReason.TOOL_CALLS if message.tool_calls else FinishReason.STOP
        return ChatResponse(
            [Generation(message, GenerationMetadata(finish_reason=reason))],
            ChatResponseMetadata(id=f"scripted-{next(_ids)}", model=self._model, usage=self._usage),
        )

    def _chunks(self, response: ChatResponse) -> Iterator[ChatResponse]:
        meta = ChatResponseMetadata(id=response.metadata.id, model=response.metadata.model)
        for index, generation in enumerate(response.generations):
            padding = [Generation(AssistantMessage(None))] * index
            text = generation.output.text or ""
            for start in range(0, len(text), self._text_chunk_size):
                delta = AssistantMessage(text[start : start + self._text_chunk_size])
                yield ChatResponse([*padding, Generation(delta)], meta)
            for call in generation.output.tool_calls:
                for part, fragment in enumerate(self._split(call.arguments)):
                    piece = ToolCall(
                        id=call.id,
                        type=call.type,
                        name=call.name if part == 0 else "",
                        arguments=fragment,
                        wire_id=call.wire_id,
                    )
                    yield ChatResponse([*padding, Generation(AssistantMessage(None, tool_calls=[piece]))], meta)
            closing = AssistantMessage(None, metadata=generation.output.metadata)
            yield ChatResponse([*padding, Generation(closing, generation.metadata)], meta)
        yield ChatResponse([], response.metadata)

    def _split(self, arguments: str) -> list[str]:
        if not arguments:
            return [""]
        size = max(1, -(-len(arguments) // self._argument_chunks))
        return [arguments[i : i + size] for i in range(0, len(arguments), size)]

    def call(self, prompt: Prompt) -> ChatResponse:
        if self._delay:
            time.sleep(self._delay)
        return self._reply(prompt)

    async def acall(self, prompt: Prompt) -> ChatResponse:
        if self._delay:
            await asyncio.sleep(self._delay)
        return self._reply(prompt)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield from self._chunks(self.call(prompt))

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for chunk in self._chunks(await self.acall(prompt)):
            yield chunk
