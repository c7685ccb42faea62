"""Folding advisors into one handler per mode: built from the inside out, immutable, re-entrant.

The model call is the innermost handler. In a stream it is also the one place where a reply is
assembled: it folds the model's events with the accumulator, passes the deltas on, and ends the
stream with ``TurnFinished``. With observers, each model round is reported to them (and each
advisor invocation, when an observer asks for it); without, the plain handlers are used and
instrumentation costs nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar, cast

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
from .events import ModelEvent, StreamEvent, TurnFinished
from .messages import Message, UserMessage
from .model import ChatModel
from .observation import UNWATCHED, AdvisorInfo, ModelCallInfo, Observers, Watch, call_is_quiet, observing
from .options import ChatOptions
from .prompt import Prompt
from .responses import ChatResponse
from .streaming import ChatResponseAccumulator, delta_events

__all__ = ["ComposedChains", "compose_acall", "compose_astream", "compose_call", "compose_stream"]

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


HandlerT = TypeVar("HandlerT")


class ComposedChains:
    """The chains one client composed, by mode, model and advisors. Chains are re-entrant and hold no
    per-request state, so a request with the same advisors and no observers reuses the composed
    handler instead of building its closures on every call (fewer objects per call in flight)."""

    __slots__ = ("_by_key", "_last")
    LIMIT = 32
    """Distinct chains kept; past it the cache starts over (per-request advisors make new chains)."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[Any, ...], tuple[ChatModel, tuple[Advisor, ...], Any]] = {}
        self._last: dict[Any, tuple[Sequence[Advisor], ChatModel, Any]] = {}
        """Per mode: the last advisors sequence asked for (the object itself), its model and handler.
        A client hands every request without advisors of its own the same chain tuple, so most
        requests are answered by two identity checks, without building and hashing a key."""

    def get(self, compose: Callable[..., HandlerT], advisors: Sequence[Advisor], model: ChatModel) -> HandlerT:
        last = self._last.get(compose)
        if last is not None and last[0] is advisors and last[1] is model and isinstance(advisors, tuple):
            same: HandlerT = last[2]  # a tuple cannot have changed since
            return same
        # Keyed by identity: the entry holds the model and advisors, so no id is reused while it lives.
        key = (compose, id(model), *map(id, advisors))
        hit = self._by_key.get(key)
        if hit is not None:
            handler: HandlerT = hit[2]
        else:
            handler = compose(advisors, model)
            if len(self._by_key) >= self.LIMIT:
                self._by_key.clear()
            self._by_key[key] = (model, tuple(advisors), handler)
        self._last[compose] = (advisors, model, handler)
        return handler


def compose_call(advisors: Sequence[Advisor], model: ChatModel, observers: Observers | None = None) -> CallNext:
    def terminal(request: ChatClientRequest) -> ChatClientResponse:
        return ChatClientResponse(model.call(model_prompt(request, model)), request.context)

    def observed(request: ChatClientRequest) -> ChatClientResponse:
        assert observers is not None
        if call_is_quiet():
            return terminal(request)
        prompt = model_prompt(request, model)
        with _model_watch(observers, prompt, model) as watch, observing(observers):
            chat = model.call(prompt)
            watch.returns(chat)
        return ChatClientResponse(chat, request.context)

    handler: CallNext = observed if observers else terminal
    folded: CallNext = _fold(advisors, handler, "advise_call", observers, _bind_call, _watched_call)
    return folded


def _bind_call(method: Any, inner: CallNext) -> CallNext:
    def handler(request: ChatClientRequest) -> ChatClientResponse:
        response: ChatClientResponse = method(request, inner)
        return response

    return handler


def compose_acall(advisors: Sequence[Advisor], model: ChatModel, observers: Observers | None = None) -> AsyncCallNext:
    async def terminal(request: ChatClientRequest) -> ChatClientResponse:
        return ChatClientResponse(await model.acall(model_prompt(request, model)), request.context)

    async def observed(request: ChatClientRequest) -> ChatClientResponse:
        assert observers is not None
        if call_is_quiet():
            return await terminal(request)
        prompt = model_prompt(request, model)
        with _model_watch(observers, prompt, model) as watch, observing(observers):
            chat = await model.acall(prompt)
            watch.returns(chat)
        return ChatClientResponse(chat, request.context)

    handler: AsyncCallNext = observed if observers else terminal
    folded: AsyncCallNext = _fold(advisors, handler, "aadvise_call", observers, _bind_acall, _watched_acall)
    return folded


def _bind_acall(method: Any, inner: AsyncCallNext) -> AsyncCallNext:
    # Returns the advisor's own coroutine: no wrapper coroutine per advisor per call (300 calls in
    # flight hold 300 fewer frames, so the collector runs less).
    def handler(request: ChatClientRequest) -> Awaitable[ChatClientResponse]:
        awaitable: Awaitable[ChatClientResponse] = method(request, inner)
        return awaitable

    return handler


def compose_stream(advisors: Sequence[Advisor], model: ChatModel, observers: Observers | None = None) -> StreamNext:
    def terminal(request: ChatClientRequest) -> Iterator[StreamEvent]:
        round_ = _StreamedRound(request, model, observers)
        events = model.stream(round_.prompt)
        with round_.watch:
            try:
                with round_.opening():  # retries happen while the stream opens
                    first = next(events, None)
                if first is not None:
                    yield from round_.first(first)
                    for event in events:
                        yield from round_.passed_on(event)
                round_.build()
            finally:
                close = getattr(events, "close", None)
                if close is not None:
                    close()
        yield round_.finished()

    handler: StreamNext = terminal
    folded: StreamNext = _fold(advisors, handler, "advise_stream", observers, _bind_stream, _watched_stream)
    return folded


def _bind_stream(method: Any, inner: StreamNext) -> StreamNext:
    def handler(request: ChatClientRequest) -> Iterator[StreamEvent]:
        events: Iterator[StreamEvent] = method(request, inner)
        return events

    return handler


def compose_astream(
    advisors: Sequence[Advisor], model: ChatModel, observers: Observers | None = None
) -> AsyncStreamNext:
    async def terminal(request: ChatClientRequest) -> AsyncIterator[StreamEvent]:
        round_ = _StreamedRound(request, model, observers)
        events = model.astream(round_.prompt)
        with round_.watch:
            try:
                with round_.opening():  # retries happen while the stream opens
                    first: ModelEvent | None = await anext(events, None)
                if first is not None:
                    for delta in round_.first(first):
                        yield delta
                    async for event in events:
                        for delta in round_.passed_on(event):
                            yield delta
                round_.build()
            finally:
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()
        yield round_.finished()

    handler: AsyncStreamNext = terminal
    folded: AsyncStreamNext = _fold(advisors, handler, "aadvise_stream", observers, _bind_astream, _watched_astream)
    return folded


def _bind_astream(method: Any, inner: AsyncStreamNext) -> AsyncStreamNext:
    def handler(request: ChatClientRequest) -> AsyncIterator[StreamEvent]:
        events: AsyncIterator[StreamEvent] = method(request, inner)
        return events

    return handler


def _fold(
    advisors: Sequence[Advisor], handler: Any, name: str, observers: Observers | None, bind: Any, watched: Any
) -> Any:
    """Wrap ``handler`` in each advisor, the first outermost; reported to observers that watch advisors."""
    watch = observers is not None and observers.watch_advisors
    mode = _MODES[name].rstrip("()")
    for advisor in reversed(advisors):
        method = _method(advisor, name)
        if watch:
            handler = watched(method, handler, observers, AdvisorInfo(advisor.name, advisor.order, mode))
        else:
            handler = bind(method, handler)
    return handler


def _advisor_watch(observers: Observers, info: AdvisorInfo) -> Watch:
    def finished(tokens: Any, info: AdvisorInfo, result: Any, error: BaseException | None) -> None:
        observers.advisor_finished(tokens, info, error)

    return Watch(observers.advisor_started, finished, info)


def _watched_call(method: Any, inner: CallNext, observers: Observers, info: AdvisorInfo) -> CallNext:
    def handler(request: ChatClientRequest) -> ChatClientResponse:
        if call_is_quiet():
            return cast(ChatClientResponse, method(request, inner))
        with _advisor_watch(observers, info):
            return cast(ChatClientResponse, method(request, inner))

    return handler


def _watched_acall(method: Any, inner: AsyncCallNext, observers: Observers, info: AdvisorInfo) -> AsyncCallNext:
    async def handler(request: ChatClientRequest) -> ChatClientResponse:
        if call_is_quiet():
            return cast(ChatClientResponse, await method(request, inner))
        with _advisor_watch(observers, info):
            return cast(ChatClientResponse, await method(request, inner))

    return handler


def _watched_stream(method: Any, inner: StreamNext, observers: Observers, info: AdvisorInfo) -> StreamNext:
    """The advisor's stream, reported as finished when its ``TurnFinished`` passes (a consumer may
    stop reading there), or when it raises or is closed early."""

    def handler(request: ChatClientRequest) -> Iterator[StreamEvent]:
        events: Iterator[StreamEvent] = method(request, inner)
        if call_is_quiet():
            yield from events
            return
        with _advisor_watch(observers, info) as watch:
            for event in events:
                if isinstance(event, TurnFinished):
                    watch.finish()
                yield event

    return handler


def _watched_astream(method: Any, inner: AsyncStreamNext, observers: Observers, info: AdvisorInfo) -> AsyncStreamNext:
    """As :func:`_watched_stream`."""

    async def handler(request: ChatClientRequest) -> AsyncIterator[StreamEvent]:
        events: AsyncIterator[StreamEvent] = method(request, inner)
        if call_is_quiet():
            async for event in events:
                yield event
            return
        with _advisor_watch(observers, info) as watch:
            async for event in events:
                if isinstance(event, TurnFinished):
                    watch.finish()
                yield event

    return handler


class _StreamedRound:
    """A streamed model round's bookkeeping, for both stream terminals: each event folded into the
    reply and turned into what the consumer sees, and the observers told (start, first chunk, each
    chunk when one asks, the end)."""

    __slots__ = ("_accumulator", "_add", "_chat", "_context", "_observers", "_tell_chunks", "info", "prompt", "watch")

    def __init__(self, request: ChatClientRequest, model: ChatModel, observers: Observers | None) -> None:
        self.prompt = prompt = model_prompt(request, model)
        self._context = request.context
        self._accumulator = accumulator = ChatResponseAccumulator()
        self._add = accumulator.add
        self._observers = observers
        self._chat: ChatResponse | None = None
        self.info = info = _stream_info(prompt, model, observers)
        if observers and info is not None:
            self.watch = Watch(observers.model_started, observers.model_finished, info)
            self._tell_chunks = observers.watch_chunks
        else:
            self.watch = UNWATCHED
            self._tell_chunks = False

    def opening(self) -> AbstractContextManager[None]:
        observers = self._observers
        return observing(observers) if observers else nullcontext()

    def first(self, event: ModelEvent) -> tuple[StreamEvent, ...] | Iterator[StreamEvent]:
        observers = self._observers
        if observers and observers.watch_first_chunk and self.info is not None:
            observers.model_first_chunk(self.watch.tokens, self.info)
        return self._folded(event)

    def passed_on(self, event: ModelEvent) -> tuple[StreamEvent, ...] | Iterator[StreamEvent]:
        """Fold a later event; what the consumer sees of it (a chunk's deltas, or the event)."""
        if self._tell_chunks:
            assert self._observers is not None and self.info is not None
            self._observers.model_chunk(self.watch.tokens, self.info)
        return self._folded(event)

    def _folded(self, event: ModelEvent) -> tuple[StreamEvent, ...] | Iterator[StreamEvent]:
        self._add(event)
        return delta_events(event) if isinstance(event, ChatResponse) else (event,)

    def build(self) -> None:
        self._chat = chat = self._accumulator.build()
        self.watch.returns(chat)

    def finished(self) -> TurnFinished:
        return TurnFinished(ChatClientResponse(self._chat, self._context))


def _stream_info(prompt: Prompt, model: ChatModel, observers: Observers | None) -> ModelCallInfo | None:
    """What a streamed round reports, or ``None`` when nothing observes it (no observers, a quiet call)."""
    if not observers or call_is_quiet():
        return None
    return ModelCallInfo(prompt, True, _model_name(prompt, model), model)


def _model_watch(observers: Observers, prompt: Prompt, model: ChatModel) -> Watch:
    """The watch of a model round that is not streamed."""
    info = ModelCallInfo(prompt, streaming=False, model=_model_name(prompt, model), chat_model=model)
    return Watch(observers.model_started, observers.model_finished, info)


def _model_name(prompt: Prompt, model: ChatModel) -> str | None:
    """The model asked for: the request's, else the provider model's default."""
    options = prompt.options
    if options is not None and options.model:
        return options.model
    defaults = model.default_options
    return defaults.model if defaults is not None else None
