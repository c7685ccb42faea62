"""What ``call()``, ``stream()``, ``acall()`` and ``astream()`` return: lazy terminals.

Each terminal method builds the request and runs the chain anew, so calling two terminals runs the
model twice; keep the ``ChatClientResponse`` if you need several views of one reply. A stream's
final response stays on its spec once consumed (``.response``), so nothing needs re-assembling.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from pydantic import TypeAdapter

from ._chain import HandlerT, compose_acall, compose_astream, compose_call, compose_stream
from .advisor import Advisor, ChatClientRequest, ChatClientResponse, ContextKeys
from .errors import ChatClientError, ConfigurationError, StructuredOutputError
from .events import StreamEvent, TextDelta, ToolResultReady, TurnFinished
from .messages import AssistantMessage
from .model import ChatModel
from .observation import UNWATCHED, CallInfo, Observers, Watch
from .responses import ChatResponse, Generation

if TYPE_CHECKING:
    from .structured_output import ResponseEntity
    from .tools.callback import ToolCallbackProvider

__all__ = [
    "AsyncCallResponseSpec",
    "AsyncStreamResponseSpec",
    "CallResponseSpec",
    "StreamResponseSpec",
]

T = TypeVar("T")


class PreparedRequest(Protocol):
    """What a response spec needs of one prepared run (the client's ``PreparedRequest``): the request,
    its chain as one handler, the request with its dynamic tools added, and where its usage goes.
    Declared here so that the specs know the client only through the ``prepare`` it hands them."""

    @property
    def request(self) -> ChatClientRequest: ...

    @property
    def observers(self) -> Observers | None: ...

    @property
    def providers(self) -> tuple[ToolCallbackProvider, ...]: ...

    def composed(self, compose: Callable[..., HandlerT], model: ChatModel) -> HandlerT: ...

    def record(self, response: ChatClientResponse) -> None: ...

    def resolve(self) -> ChatClientRequest: ...

    async def aresolve(self) -> ChatClientRequest: ...


class _Prepare(Protocol):
    def __call__(
        self, extra_context: Mapping[str, Any] | None = None, extra_advisors: Sequence[Advisor] = ()
    ) -> PreparedRequest: ...


class _AsyncPrepare(Protocol):
    """:class:`_Prepare` for ``acall``/``astream`` resuming from an async pending store: awaited on the
    request's loop, so the state is peeked at there. Every other async request is prepared by the
    plain :class:`_Prepare` (no coroutine per call)."""

    async def __call__(
        self, extra_context: Mapping[str, Any] | None = None, extra_advisors: Sequence[Advisor] = ()
    ) -> PreparedRequest: ...


def _validation(type_: Any, retries: int) -> tuple[Advisor, ...]:
    """``entity(T, retries=N)``'s one switch: the validation advisor in this request, or nothing."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigurationError(f"entity() retries must be an int >= 0, got {retries!r}")
    if retries == 0:
        return ()
    from .structured_output import StructuredOutputValidationAdvisor

    return (StructuredOutputValidationAdvisor(type_, max_repeat_attempts=retries),)


def _converted(adapter: TypeAdapter[T], response: ChatClientResponse) -> T:
    """The final reply as the requested type; the error says how many replies were asked for."""
    from .structured_output import parse_reply, structured_output_attempts  # only entity() needs them

    try:
        return parse_reply(adapter, response.chat_response)
    except StructuredOutputError as exc:
        record = structured_output_attempts(response)
        attempts = record.attempts if record is not None and record.attempts > 0 else 1
        exc.attempts = attempts
        if attempts > 1:
            exc.args = (f"{exc.args[0]} (after {attempts} attempts)",)
        raise


def _watch(mode: str, prepared: PreparedRequest) -> Watch:
    """The client call's watch: its observers told when it starts and when it finishes."""
    observers = prepared.observers
    if not observers:
        return UNWATCHED
    request = prepared.request
    info = CallInfo(mode, request.prompt, ContextKeys.RESUME in request.context, request.context)
    return Watch(observers.call_started, observers.call_finished, info)


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
        output. Raises :class:`StructuredOutputError` (with the raw text) when it does not parse.

        ``retries=N`` puts a ``StructuredOutputValidationAdvisor`` in this request: inside the tool
        loop, it asks the model again, told the validation errors, up to N times; the reply's
        metadata records the attempts (``structured_output_attempts(response)``) and the error's
        ``attempts`` says how many replies were asked for. Without it nothing extra runs.
        """
        return self.response_entity(type_, native=native, retries=retries).entity

    @overload
    def response_entity(self, type_: type[T], *, native: bool = False, retries: int = 0) -> ResponseEntity[T]: ...
    @overload
    def response_entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> ResponseEntity[Any]: ...

    def response_entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> ResponseEntity[Any]:
        """As :meth:`entity`, with the response it came from (``.attempts`` reads the validation record)."""
        from .structured_output import ResponseEntity, entity_context  # loaded by the first entity()

        adapter, context = entity_context(type_, native)
        response = self._run(context, _validation(type_, retries))
        return ResponseEntity(response, _converted(adapter, response))

    def _run(self, context: Mapping[str, Any] | None, advisors: Sequence[Advisor] = ()) -> ChatClientResponse:
        prepared = self._prepare(context, advisors)
        handler = prepared.composed(compose_call, self._model)
        if not prepared.observers:  # as AsyncCallResponseSpec._run
            response = handler(prepared.resolve())
            prepared.record(response)
            return response
        with _watch("call", prepared) as watch:
            response = handler(prepared.resolve())
            prepared.record(response)
            watch.returns(response)
        return response


class AsyncCallResponseSpec:
    """Terminals of ``acall()``: the same names as ``call()``, awaited."""

    __slots__ = ("_aprepare", "_model", "_prepare")

    def __init__(self, model: ChatModel, prepare: _Prepare, aprepare: _AsyncPrepare | None = None) -> None:
        self._model = model
        self._prepare = prepare
        self._aprepare = aprepare

    # Each terminal hands back ``_run``'s own coroutine, which ends in the part of the response asked
    # for: one coroutine per call, written once.

    def chat_client_response(self) -> Coroutine[Any, Any, ChatClientResponse]:
        return self._run(None, (), _whole)

    def chat_response(self) -> Coroutine[Any, Any, ChatResponse | None]:
        return self._run(None, (), _chat_response)

    def content(self) -> Coroutine[Any, Any, str | None]:
        """The text of the reply, or ``None`` when it has none (e.g. a paused tool call)."""
        return self._run(None, (), _text)

    @overload
    async def entity(self, type_: type[T], *, native: bool = False, retries: int = 0) -> T: ...
    @overload
    async def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any: ...

    async def entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> Any:
        return (await self.response_entity(type_, native=native, retries=retries)).entity

    @overload
    async def response_entity(self, type_: type[T], *, native: bool = False, retries: int = 0) -> ResponseEntity[T]: ...
    @overload
    async def response_entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> ResponseEntity[Any]: ...

    async def response_entity(self, type_: Any, *, native: bool = False, retries: int = 0) -> ResponseEntity[Any]:
        from .structured_output import ResponseEntity, entity_context  # loaded by the first entity()

        adapter, context = entity_context(type_, native)
        response = await self._run(context, _validation(type_, retries), _whole)
        return ResponseEntity(response, _converted(adapter, response))

    async def _run(
        self, context: Mapping[str, Any] | None, advisors: Sequence[Advisor], view: Callable[[ChatClientResponse], T]
    ) -> T:
        aprepare = self._aprepare
        prepared = self._prepare(context, advisors) if aprepare is None else await aprepare(context, advisors)
        handler = prepared.composed(compose_acall, self._model)
        if not prepared.observers:  # why no watch here: benchmarks/results/2026-12-06-mechanisms.md
            response = await handler(await prepared.aresolve() if prepared.providers else prepared.request)
            prepared.record(response)
            return view(response)
        with _watch("acall", prepared) as watch:
            response = await handler(await prepared.aresolve() if prepared.providers else prepared.request)
            prepared.record(response)
            watch.returns(response)
        return view(response)


def _whole(response: ChatClientResponse) -> ChatClientResponse:
    return response


def _chat_response(response: ChatClientResponse) -> ChatResponse | None:
    return response.chat_response


def _text(response: ChatClientResponse) -> str | None:
    return response.text


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
        prepared, events = self._chain_events()
        for event in events:
            if isinstance(event, TurnFinished):
                self._final = event.response
                prepared.record(event.response)
            yield event

    def _chain_events(self) -> tuple[PreparedRequest, Iterator[StreamEvent]]:
        """The chain's own iterator (observed when there are observers): the terminals read it
        directly, one generator less per delta."""
        prepared = self._prepare(None)
        events = prepared.composed(compose_stream, self._model)(prepared.resolve())
        return prepared, _observed(events, _watch("stream", prepared)) if prepared.observers else events

    def content(self) -> Iterator[str]:
        """Text deltas as they arrive (empty deltas are skipped), then any unstreamed rest of the answer."""
        view = _TextView()
        seen = view.round_text
        prepared, events = self._chain_events()
        for event in events:
            if type(event) is TextDelta:  # the hot path: one check per delta
                if event.index == 0 and event.text:
                    seen.append(event.text)
                    yield event.text
            elif isinstance(event, TurnFinished):
                self._final = event.response
                prepared.record(event.response)
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


def _observed(events: Iterator[StreamEvent], watch: Watch) -> Iterator[StreamEvent]:
    """A sync stream's events, its client call watched until they end."""
    with watch:
        for event in events:
            if isinstance(event, TurnFinished):
                watch.returns(event.response)
            yield event


class AsyncStreamResponseSpec(_StreamBase):
    """Terminals of ``astream()``: async iterators with the names of ``stream()``."""

    __slots__ = ("_aprepare",)

    def __init__(self, model: ChatModel, prepare: _Prepare, aprepare: _AsyncPrepare | None = None) -> None:
        super().__init__(model, prepare)
        self._aprepare = aprepare

    async def events(self) -> AsyncIterator[StreamEvent]:
        aprepare = self._aprepare
        prepared = self._prepare(None) if aprepare is None else await aprepare(None)
        with _watch("astream", prepared) as watch:
            request = await prepared.aresolve() if prepared.providers else prepared.request
            async for event in prepared.composed(compose_astream, self._model)(request):
                if isinstance(event, TurnFinished):
                    self._final = event.response
                    prepared.record(event.response)
                    watch.returns(event.response)
                yield event

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
