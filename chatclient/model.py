"""The provider SPI: a ``ChatModel`` translates a ``Prompt`` to one wire API and back.

A model never runs tools; it returns the reply, tool calls included, and the
``ToolCallingAdvisor`` runs the loop. That is what makes the loop identical on every provider.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

from .options import ChatOptions
from .prompt import Prompt
from .responses import ChatResponse

if TYPE_CHECKING:
    from .events import ModelEvent  # a stream's; loaded with the first stream, not with every provider

__all__ = ["ChatModel"]


class ChatModel(ABC):
    """Implement ``call``; override ``stream``, ``acall`` and ``astream`` for real streaming and
    native async.

    The defaults keep a minimal provider usable everywhere: ``stream`` yields the whole reply as
    one chunk, ``acall`` runs ``call`` in a worker thread, ``astream`` yields ``acall``'s reply.

    Streaming contract: ``stream``/``astream`` yield :data:`~chatclient.events.ModelEvent` values:
    ``TextDelta``, ``ReasoningDelta``, ``ToolCallStarted`` (id and name) and ``ToolCallDelta``
    (argument fragments keyed by the call id) as they arrive, and ``ChatResponse`` chunks for the
    rest: response id and model, finish reasons, message metadata (thinking blocks, reasoning
    items, refusals) and ``usage``, which is the total so far for this reply (the last one wins).
    A ``ChatResponse`` chunk may also hold text deltas and tool-call fragments, so a minimal
    provider can yield chunks only, or its whole reply as one chunk.
    """

    supports_output_schema: bool = False
    """True when the provider honours ``ChatOptions.output_schema`` (native structured output)."""

    @property
    def default_options(self) -> ChatOptions | None:
        """Options this model applies under every request's own (e.g. its model name)."""
        return None

    def options_for(self, prompt: Prompt) -> ChatOptions:
        """The options to send: the prompt's over this model's defaults (free when the client merged)."""
        defaults = self.default_options
        if prompt.options is None:
            return defaults if defaults is not None else ChatOptions()
        return prompt.options.merged_over(defaults)

    @abstractmethod
    def call(self, prompt: Prompt) -> ChatResponse: ...

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        yield self.call(prompt)

    async def acall(self, prompt: Prompt) -> ChatResponse:
        import asyncio

        return await asyncio.to_thread(self.call, prompt)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        yield await self.acall(prompt)
