"""A model that falls back to the next one when a provider is down: ``FallbackChatModel``.

It wraps ``ChatModel`` values of any provider and imports none: each round of a request (the tool
loop's rounds included) goes to the first model, and on a failure worth another model (rate limit,
overload, 5xx, timeout, connection) to the next. A bad request is the caller's to fix, so it is raised
at once. A stream falls back only before its first delta reached the caller: once text has been
shown, another model's answer cannot replace it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

from typing_extensions import Self

from chatclient.errors import APIConnectionError, ConfigurationError, RateLimitError, ServerError
from chatclient.model import ChatModel
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, ChatResponseMetadata

if TYPE_CHECKING:
    from chatclient.events import ModelEvent

__all__ = ["FALLBACK_MODEL_KEY", "FALLBACK_POSITION_KEY", "FallbackChatModel", "falls_back"]

FALLBACK_MODEL_KEY = "fallback.model"
"""``ChatResponse.metadata.extra`` key: the label of the model that answered (``"OpenAIChatModel(gpt-4o)"``)."""
FALLBACK_POSITION_KEY = "fallback.position"
"""``ChatResponse.metadata.extra`` key: that model's position in the chain (0 for the primary)."""

FALLBACK_ERRORS: tuple[type[BaseException], ...] = (RateLimitError, ServerError, APIConnectionError)
"""What another model may answer: rate limits, overload and 5xx, timeouts and connection failures
(``APITimeoutError`` and ``DeadlineExceeded`` are connection errors)."""


def falls_back(error: BaseException) -> bool:
    """The default ``on=``: a failure of the provider (:data:`FALLBACK_ERRORS`), never of the request."""
    return isinstance(error, FALLBACK_ERRORS)


def model_label(model: ChatModel) -> str:
    """``"OpenAIChatModel(gpt-4o-mini)"``: the model's class and, when it has one, its model name."""
    defaults = model.default_options
    name = defaults.model if defaults is not None else None
    kind = type(model).__name__
    return f"{kind}({name})" if name else kind


def _has_delta(event: ModelEvent) -> bool:
    """Whether ``event`` carries part of the answer (text, reasoning, a tool call), not just ids or usage."""
    if not isinstance(event, ChatResponse):
        return True
    return any(g.output.text or g.output.tool_calls for g in event.generations)


def _answered(position: int, model: ChatModel) -> ChatResponseMetadata:
    return ChatResponseMetadata(extra={FALLBACK_MODEL_KEY: model_label(model), FALLBACK_POSITION_KEY: position})


def _marked(response: ChatResponse, position: int, model: ChatModel) -> ChatResponse:
    meta = response.metadata
    extra = {**meta.extra, FALLBACK_MODEL_KEY: model_label(model), FALLBACK_POSITION_KEY: position}
    return ChatResponse(response.generations, meta.model_copy(update={"extra": extra}))


class FallbackChatModel(ChatModel):
    """``primary``, then each of ``others`` in turn, for every model round of a request.

    ``on`` says which failures are handed to the next model: a predicate over the error, or a tuple
    of error types (default :func:`falls_back`: rate limits, overload, 5xx, timeouts, connection
    errors). The last model's failure, or one ``on`` rejects, is raised as it is. Each model keeps
    its own retries: a model is given up only after its own retry policy has.

    Every model applies its own default options (its model name, its provider's settings) under the
    request's; the response's ``metadata.extra`` names the model that answered
    (:data:`FALLBACK_MODEL_KEY`, :data:`FALLBACK_POSITION_KEY`), and observers are told of each fall
    back (``ChatObserver.fallback``). A tool round, or a turn paused for confirmation and resumed, is
    a new round: it goes to the primary again, with the history whichever model wrote it.
    """

    def __init__(
        self,
        primary: ChatModel,
        *others: ChatModel,
        on: Callable[[BaseException], bool] | tuple[type[BaseException], ...] = falls_back,
    ) -> None:
        models = (primary, *others)
        for model in models:
            if not isinstance(model, ChatModel):
                raise ConfigurationError(f"FallbackChatModel takes ChatModel values, not {type(model).__name__}")
        if isinstance(on, tuple):
            kinds = on
            self._on: Callable[[BaseException], bool] = lambda error: isinstance(error, kinds)
        elif callable(on):
            self._on = on
        else:
            raise ConfigurationError("on= is a predicate over the error or a tuple of error types")
        self.models = models
        self.supports_output_schema = all(m.supports_output_schema for m in models)

    def __repr__(self) -> str:
        return f"FallbackChatModel({', '.join(model_label(m) for m in self.models)})"

    def close(self) -> None:
        """Close every model of the chain that holds connections (``close()``)."""
        for model in self.models:
            close = getattr(model, "close", None)
            if callable(close):
                close()

    async def aclose(self) -> None:
        """Close every model of the chain, awaiting each one's ``aclose()`` (else its ``close()``)."""
        for model in self.models:
            aclose = getattr(model, "aclose", None)
            if callable(aclose):
                await aclose()
            elif callable(close := getattr(model, "close", None)):
                close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _next(self, position: int, error: BaseException) -> bool:
        """Whether to go on to the model after ``position`` (observers told); ``False``: raise ``error``."""
        if position + 1 >= len(self.models) or not self._on(error):
            return False
        from chatclient.observation import notify_fallback  # only when a model failed

        notify_fallback(self.models[position], error, self.models[position + 1], position + 1)
        return True

    def call(self, prompt: Prompt) -> ChatResponse:
        for position, model in enumerate(self.models):
            try:
                return _marked(model.call(prompt), position, model)
            except Exception as error:
                if not self._next(position, error):
                    raise
        raise AssertionError("unreachable: the last model's failure is raised")  # pragma: no cover

    async def acall(self, prompt: Prompt) -> ChatResponse:
        for position, model in enumerate(self.models):
            try:
                return _marked(await model.acall(prompt), position, model)
            except Exception as error:
                if not self._next(position, error):
                    raise
        raise AssertionError("unreachable: the last model's failure is raised")  # pragma: no cover

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        """Leading chunks without a delta (ids, a model name) are held back until the first delta:
        a model that fails before it leaves nothing of its own in the reply."""
        for position, model in enumerate(self.models):
            held: list[ModelEvent] | None = []
            events: Iterator[ModelEvent] | None = None
            try:
                events = model.stream(prompt)
                for event in events:
                    if held is not None and not _has_delta(event):
                        held.append(event)
                        continue
                    if held is not None:
                        yield from held
                        held = None
                    yield event
            except Exception as error:
                if held is None or not self._next(position, error):
                    raise
                continue
            finally:
                close = getattr(events, "close", None)
                if callable(close):
                    close()
            yield from held or ()
            yield ChatResponse((), _answered(position, model))
            return

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        for position, model in enumerate(self.models):
            held: list[ModelEvent] | None = []
            events: AsyncIterator[ModelEvent] | None = None
            try:
                events = model.astream(prompt)
                async for event in events:
                    if held is not None and not _has_delta(event):
                        held.append(event)
                        continue
                    if held is not None:
                        for early in held:
                            yield early
                        held = None
                    yield event
            except Exception as error:
                if held is None or not self._next(position, error):
                    raise
                continue
            finally:
                aclose = getattr(events, "aclose", None)
                if callable(aclose):
                    await aclose()
            for early in held or ():
                yield early
            yield ChatResponse((), _answered(position, model))
            return
