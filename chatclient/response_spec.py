"""What ``call()``, ``stream()``, ``acall()`` and ``astream()`` return: lazy terminals.

Each terminal method builds the request and runs the chain anew, so calling two terminals runs the
model twice; keep the ``ChatClientResponse`` if you need several views of one reply. A stream's
final response stays on its spec once consumed (``.response``), so nothing needs re-assembling.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from ._chain import compose_acall, compose_astream, compose_call, compose_stream
from .advisor import ChatClientResponse, ContextKeys
from .errors import ChatClientError, ConfigurationError, StructuredOutputError
from .events import StreamEvent, TextDelta, ToolResultReady, TurnFinished
from .messages import AssistantMessage
from .model import ChatModel
from .observation import CallInfo, Observers
from .responses import ChatResponse, Generation

if TYPE_CHECKING:
    from .client import PreparedRequest

__all__ = [
    "AsyncCallResponseSpec",
    "AsyncStreamResponseSpec",
    "CallResponseSpec",
    "StreamResponseSpec",
]

T = TypeVar("T")
_Prepare = Callable[[Mapping[str, Any] | None], "PreparedRequest"]

_FORMAT = """Your response should be in JSON format.
Do not include any explanations, only provide a RFC8259 compliant JSON response following this format \
without deviation.
Do not include markdown code blocks in your response.
Here is the JSON Schema instance your output must adhere to:
```{schema}```"""

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@functools.lru_cache(maxsize=256)
def _adapter(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)


def _entity_context(type_: Any, native: bool) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    try:
        adapter = _adapter(type_)
        schema = adapter.json_schema()
    except (PydanticUserError, TypeError) as exc:  # TypeError: an unhashable "type" in the cache
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigurationError(
            f"entity() cannot convert to {type_!r}: pydantic has no JSON schema for it ({first}); "
            "use a pydantic model, a dataclass, a TypedDict or a standard type. Nothing was sent."
        ) from exc
    context: dict[str, Any] = {ContextKeys.OUTPUT_FORMAT: _FORMAT.format(schema=json.dumps(schema))}
    if native:
        context[ContextKeys.OUTPUT_SCHEMA] = schema
    return adapter, context


def _parse(adapter: TypeAdapter[T], response: ChatClientResponse) -> T:
    chat = response.chat_response
    text = chat.text if chat is not None else None
    if not text or not text.strip():
        raise StructuredOutputError("The model returned no text to convert", text)
    match = _FENCE.match(text)
    cleaned = match.group(1) if match else text.strip()
    try:
        return adapter.validate_json(cleaned)
    except ValidationError as exc:
        raise StructuredOutputError(
            f"The model's reply does not match the requested type: {exc.error_count()} error(s): "
            + "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()),
            text,
        ) from exc


def _reask(context: dict[str, Any], error: StructuredOutputError, attempt: int) -> dict[str, Any]:
    """The next attempt's context: the format instructions plus what was wrong with the last reply."""
    base = context.get(_FIRST_FORMAT, context[ContextKeys.OUTPUT_FORMAT])
    fix = f"\n\nAttempt {attempt} of your reply was rejected: {error}\nReply again, fixing these errors."
    return {**context, _FIRST_FORMAT: base, ContextKeys.OUTPUT_FORMAT: base + fix}


def _gave_up(error: StructuredOutputError, attempts: int) -> StructuredOutputError:
    error.attempts = attempts
    if attempts > 1:
        error.args = (f"{error.args[0]} (after {attempts} attempts)",)
    return error


_FIRST_FORMAT = "chatclient.output.format.first"


def _call_info(mode: str, prepared: PreparedRequest) -> CallInfo:
    request = prepared.request
    return CallInfo(mode, request.prompt, resumed=ContextKeys.RESUME in request.context)


class CallResponseSpec:
    """Terminals of ``call()``."""

    __slots__ = ("_model", "_prepare")

    def __init__(self, model: ChatModel, prepare: _Prepare) -> None:
        self._model = model
        self._prepare = prepare

    def chat_client_response(self) -> ChatClientResponse:
        return self._run(None)

    def chat_response(self) -> ChatResponse | None:
        return self._run(None).chat_response

    def content(self) -> str | None:
        """The text of the reply, or ``None`` when it has none (e.g. a paused tool call)."""
        return self._run(None).text

    @overload
    def entity(self, type_: type[T], *, native: bool = False, retries: int = 0) -> T: ...
    @overload
    def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any: ...

    def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any:
        """The reply converted to ``type_`` (a pydantic model, ``list[Model]``, a TypedDict...).

        The JSON schema goes to the model as instructions on the last user message, or, with
        ``native=True`` and a provider that supports it, through the provider's own structured
        output. Raises :class:`StructuredOutputError` (with the raw text) when it does not parse;
        with ``retries=N`` the model is first asked again up to N times, told the validation errors
        (the error's ``attempts`` says how many were made).
        """
        adapter, context = _entity_context(type_, native)
        for attempt in range(1, retries + 2):
            try:
                return _parse(adapter, self._run(context))
            except StructuredOutputError as exc:
                if attempt > retries:
                    raise _gave_up(exc, attempt) from exc.__cause__
                context = _reask(context, exc, attempt)
        raise AssertionError("unreachable")

    def _run(self, context: Mapping[str, Any] | None) -> ChatClientResponse:
        prepared = self._prepare(context)
        observers = prepared.observers
        handler = prepared.composed(compose_call, self._model)
        if not observers:
            return handler(prepared.resolve())
        info = _call_info("call", prepared)
        tokens = observers.call_started(info)
        try:
            response = handler(prepared.resolve())
        except BaseException as exc:
            observers.call_finished(tokens, info, None, exc)
            raise
        observers.call_finished(tokens, info, response, None)
        return response


class AsyncCallResponseSpec:
    """Terminals of ``acall()``: the same names as ``call()``, awaited."""

    __slots__ = ("_model", "_prepare")

    def __init__(self, model: ChatModel, prepare: _Prepare) -> None:
        self._model = model
        self._prepare = prepare

    async def chat_client_response(self) -> ChatClientResponse:
        return await self._run(None)

    async def chat_response(self) -> ChatResponse | None:
        return (await self._run(None)).chat_response

    async def content(self) -> str | None:
        return (await self._run(None)).text

    @overload
    async def entity(self, type_: type[T], *, native: bool = False, retries: int = 0) -> T: ...
    @overload
    async def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any: ...

    async def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any:
        adapter, context = _entity_context(type_, native)
        for attempt in range(1, retries + 2):
            try:
                return _parse(adapter, await self._run(context))
            except StructuredOutputError as exc:
                if attempt > retries:
                    raise _gave_up(exc, attempt) from exc.__cause__
                context = _reask(context, exc, attempt)
        raise AssertionError("unreachable")

    async def _run(self, context: Mapping[str, Any] | None) -> ChatClientResponse:
        prepared = self._prepare(context)
        observers = prepared.observers
        handler = prepared.composed(compose_acall, self._model)
        if not observers:
            return await handler(await prepared.aresolve())
        info = _call_info("acall", prepared)
        tokens = observers.call_started(info)
        try:
            response = await handler(await prepared.aresolve())
        except BaseException as exc:
            observers.call_finished(tokens, info, None, exc)
            raise
        observers.call_finished(tokens, info, response, None)
        return response


class _TextView:
    """Turns events into the text a reader sees: every round's deltas as they arrive and, at the
    end, whatever of the final answer was not streamed (a ``return_direct`` result, a limit
    message, an advisor's rewrite), so joining ``content()`` never misses the answer."""

    __slots__ = ("round_text",)

    def __init__(self) -> None:
        self.round_text: list[str] = []

    def delta(self, event: StreamEvent) -> str | None:
        if isinstance(event, TextDelta):
            if event.index == 0:
                self.round_text.append(event.text)
                return event.text
        elif isinstance(event, ToolResultReady):
            self.round_text = []  # a new round begins after tool results
        return None

    def unseen(self, final: ChatClientResponse) -> str:
        text = final.text or ""
        seen = "".join(self.round_text)
        return text[len(seen) :] if text.startswith(seen) else text


def _closing_chunk(final: ChatClientResponse, unseen: str) -> ChatResponse:
    """The last chunk of ``chat_response()``: the final reply's metadata, finish reason, usage, tool
    calls and message metadata, with only the text the caller has not seen yet."""
    chat = final.chat_response or ChatResponse([])
    generations = []
    for index, generation in enumerate(chat.generations):
        output = generation.output
        text = (unseen or None) if index == 0 else None
        message = AssistantMessage(text, tool_calls=output.tool_calls, metadata=output.metadata)
        generations.append(Generation(message, generation.metadata))
    return ChatResponse(generations, chat.metadata)


class _StreamBase:
    __slots__ = ("_final", "_model", "_prepare")

    def __init__(self, model: ChatModel, prepare: _Prepare) -> None:
        self._model = model
        self._prepare = prepare
        self._final: ChatClientResponse | None = None

    @property
    def response(self) -> ChatClientResponse:
        """The final response of the last stream run through this spec that was consumed to its end
        (the same response ``call()`` returns)."""
        if self._final is None:
            raise ChatClientError("The stream has not been consumed to its end yet: no final response")
        return self._final


class StreamResponseSpec(_StreamBase):
    """Terminals of ``stream()``: iterators that run the chain as they are consumed.

    ``events()`` gives every typed event (``chatclient.events``); ``content()`` the text;
    ``chat_response()``/``chat_client_response()`` text chunks and a closing chunk. After any of
    them is consumed, ``response`` holds the final ``ChatClientResponse``.
    """

    __slots__ = ()

    def events(self) -> Iterator[StreamEvent]:
        """Typed events as they happen; the last one is ``TurnFinished`` with the final response."""
        for event in self._chain_events():
            if isinstance(event, TurnFinished):
                self._final = event.response
            yield event

    def _chain_events(self) -> Iterator[StreamEvent]:
        """The chain's own iterator (observed when there are observers): the terminals read it
        directly, one generator less per delta."""
        prepared = self._prepare(None)
        observers = prepared.observers
        events = prepared.composed(compose_stream, self._model)(prepared.resolve())
        return self._observed(events, observers, _call_info("stream", prepared)) if observers else events

    def _observed(self, events: Iterator[StreamEvent], observers: Observers, info: CallInfo) -> Iterator[StreamEvent]:
        tokens = observers.call_started(info)
        final: ChatClientResponse | None = None
        try:
            for event in events:
                if isinstance(event, TurnFinished):
                    final = event.response
                yield event
        except BaseException as exc:
            observers.call_finished(tokens, info, None, exc)
            raise
        observers.call_finished(tokens, info, final, None)

    def content(self) -> Iterator[str]:
        """Text deltas as they arrive (empty deltas are skipped), then any unstreamed rest of the answer."""
        view = _TextView()
        seen = view.round_text
        for event in self._chain_events():
            if type(event) is TextDelta:  # the hot path: one check per delta
                if event.index == 0 and event.text:
                    seen.append(event.text)
                    yield event.text
            elif isinstance(event, TurnFinished):
                self._final = event.response
                rest = view.unseen(event.response)
                if rest:
                    yield rest
            elif isinstance(event, ToolResultReady):
                view.round_text = seen = []

    def chat_client_response(self) -> Iterator[ChatClientResponse]:
        """A chunk per text delta, then a closing chunk carrying the final metadata and context."""
        view = _TextView()
        for event in self.events():
            if isinstance(event, TurnFinished):
                final = event.response
                yield final.with_chat_response(_closing_chunk(final, view.unseen(final)))
            else:
                text = view.delta(event)
                if text:
                    yield ChatClientResponse(ChatResponse.of(text))

    def chat_response(self) -> Iterator[ChatResponse]:
        for chunk in self.chat_client_response():
            if chunk.chat_response is not None:
                yield chunk.chat_response


class AsyncStreamResponseSpec(_StreamBase):
    """Terminals of ``astream()``: async iterators with the names of ``stream()``."""

    __slots__ = ()

    async def events(self) -> AsyncIterator[StreamEvent]:
        prepared = self._prepare(None)
        observers = prepared.observers
        info = _call_info("astream", prepared) if observers else None
        tokens = observers.call_started(info) if observers and info else []
        try:
            async for event in prepared.composed(compose_astream, self._model)(await prepared.aresolve()):
                if isinstance(event, TurnFinished):
                    self._final = event.response
                yield event
        except BaseException as exc:
            if observers and info:
                observers.call_finished(tokens, info, None, exc)
            raise
        if observers and info:
            observers.call_finished(tokens, info, self._final, None)

    async def content(self) -> AsyncIterator[str]:
        view = _TextView()
        seen = view.round_text
        async for event in self.events():
            if type(event) is TextDelta:  # the hot path: one check per delta
                if event.index == 0 and event.text:
                    seen.append(event.text)
                    yield event.text
            elif isinstance(event, TurnFinished):
                rest = view.unseen(event.response)
                if rest:
                    yield rest
            elif isinstance(event, ToolResultReady):
                view.round_text = seen = []

    async def chat_client_response(self) -> AsyncIterator[ChatClientResponse]:
        view = _TextView()
        async for event in self.events():
            if isinstance(event, TurnFinished):
                final = event.response
                yield final.with_chat_response(_closing_chunk(final, view.unseen(final)))
            else:
                text = view.delta(event)
                if text:
                    yield ChatClientResponse(ChatResponse.of(text))

    async def chat_response(self) -> AsyncIterator[ChatResponse]:
        async for chunk in self.chat_client_response():
            if chunk.chat_response is not None:
                yield chunk.chat_response
