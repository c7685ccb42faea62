"""Folding advisors into one handler per mode: built from the inside out, immutable, re-entrant."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from .advisor import (
    Advisor,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    ContextKeys,
    StreamNext,
)
from .errors import AdvisorChainError
from .events import ModelEvent, ToolCallDelta, ToolCallStarted
from .messages import AssistantMessage, Message, UserMessage
from .model import ChatModel
from .options import ChatOptions
from .prompt import Prompt
from .responses import ChatResponse, Generation
from .streaming import ChatResponseAccumulator

__all__ = ["compose_acall", "compose_astream", "compose_call", "compose_stream"]

_MODES = {
    "advise_call": "call()",
    "advise_stream": "stream()",
    "aadvise_call": "acall()",
    "aadvise_stream": "astream()",
}


def _method(advisor: Advisor, name: str) -> Any:
    method = getattr(advisor, name, None)
    if method is None:
        raise AdvisorChainError(
            f"Advisor {advisor.name!r} (order {advisor.order}) cannot run in {_MODES[name]}: it has no "
            f"{name}() method. Implement it, or subclass BaseAdvisor to get all four modes."
        )
    return method


def model_prompt(request: ChatClientRequest, model: ChatModel) -> Prompt:
    """The prompt the model receives.

    ``entity()``'s output format is applied here, innermost, so advisors and memory keep the
    user's own words: through the provider's native schema support when asked for and available,
    else as instructions on the last user message.
    """
    context = request.context
    prompt = request.prompt
    instructions = context.get(ContextKeys.OUTPUT_FORMAT)
    if not instructions:
        return prompt
    schema = context.get(ContextKeys.OUTPUT_SCHEMA)
    if schema is not None and model.supports_output_schema:
        options = (prompt.options or ChatOptions()).model_copy(update={"output_schema": schema})
        return prompt.with_options(options)
    messages: list[Message] = list(prompt.messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage):
            messages[index] = message.model_copy(update={"text": f"{message.text}\n\n{instructions}"})
            return prompt.with_messages(messages)
    return prompt.with_messages([*messages, UserMessage(str(instructions))])


def compose_call(advisors: Sequence[Advisor], model: ChatModel) -> CallNext:
    def terminal(request: ChatClientRequest) -> ChatClientResponse:
        return ChatClientResponse(model.call(model_prompt(request, model)), request.context)

    handler: CallNext = terminal
    for advisor in reversed(advisors):
        handler = _bind_call(_method(advisor, "advise_call"), handler)
    return handler


def _bind_call(method: Any, inner: CallNext) -> CallNext:
    def handler(request: ChatClientRequest) -> ChatClientResponse:
        response: ChatClientResponse = method(request, inner)
        return response

    return handler


def compose_acall(advisors: Sequence[Advisor], model: ChatModel) -> AsyncCallNext:
    async def terminal(request: ChatClientRequest) -> ChatClientResponse:
        return ChatClientResponse(await model.acall(model_prompt(request, model)), request.context)

    handler: AsyncCallNext = terminal
    for advisor in reversed(advisors):
        handler = _bind_acall(_method(advisor, "aadvise_call"), handler)
    return handler


def _bind_acall(method: Any, inner: AsyncCallNext) -> AsyncCallNext:
    async def handler(request: ChatClientRequest) -> ChatClientResponse:
        response: ChatClientResponse = await method(request, inner)
        return response

    return handler


def compose_stream(advisors: Sequence[Advisor], model: ChatModel) -> StreamNext:
    def terminal(request: ChatClientRequest) -> Iterator[ChatClientResponse]:
        context = request.context
        for chunk in model.stream(model_prompt(request, model)):
            yield ChatClientResponse(_as_chunk(chunk), context)

    handler: StreamNext = terminal
    for advisor in reversed(advisors):
        handler = _bind_stream(_method(advisor, "advise_stream"), handler)
    return handler


def _bind_stream(method: Any, inner: StreamNext) -> StreamNext:
    def handler(request: ChatClientRequest) -> Iterator[ChatClientResponse]:
        chunks: Iterator[ChatClientResponse] = method(request, inner)
        return chunks

    return handler


def compose_astream(advisors: Sequence[Advisor], model: ChatModel) -> AsyncStreamNext:
    async def terminal(request: ChatClientRequest) -> AsyncIterator[ChatClientResponse]:
        context = request.context
        async for chunk in model.astream(model_prompt(request, model)):
            yield ChatClientResponse(_as_chunk(chunk), context)

    handler: AsyncStreamNext = terminal
    for advisor in reversed(advisors):
        handler = _bind_astream(_method(advisor, "aadvise_stream"), handler)
    return handler


def _bind_astream(method: Any, inner: AsyncStreamNext) -> AsyncStreamNext:
    def handler(request: ChatClientRequest) -> AsyncIterator[ChatClientResponse]:
        chunks: AsyncIterator[ChatClientResponse] = method(request, inner)
        return chunks

    return handler


def _as_chunk(event: ModelEvent) -> ChatResponse:
    """Interim: the chunk form of a model event (until the chain streams events)."""
    if isinstance(event, ChatResponse):
        return event
    accumulator = ChatResponseAccumulator()
    accumulator.add(event)
    built = accumulator.build()
    if isinstance(event, ToolCallDelta | ToolCallStarted):
        call = built.generations[-1].output.tool_calls[0]
        message = AssistantMessage(None, tool_calls=(call,))
        return ChatResponse([Generation(AssistantMessage(None))] * event.index + [Generation(message)])
    return ChatResponse([Generation(AssistantMessage(None))] * event.index + [built.generations[-1]])
