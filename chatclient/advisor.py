"""The advisor SPI: ordered middleware around the model call.

An advisor wraps the rest of the chain. It receives the request and ``next_``, a plain function that
runs everything inside it (the model call innermost) and may be called any number of times: that
is how the tool loop re-enters the chain once per round.

There is one method per mode; implement the ones you need, or subclass :class:`BaseAdvisor` and
write ``before``/``after`` once for all four. Lower ``order`` runs earlier on the way in and later
on the way out; equal orders keep registration order.

In ``stream()``/``astream()`` the chain carries :mod:`chatclient.events`: deltas as they arrive and,
last, one :class:`~chatclient.events.TurnFinished` holding the same response ``call()`` returns. An
advisor passes the events on and may replace the final one; it never re-assembles chunks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from .events import StreamEvent, TurnFinished
from .prompt import Prompt
from .responses import ChatResponse

__all__ = [
    "Advisor",
    "AdvisorOrder",
    "AsyncCallAdvisor",
    "AsyncCallNext",
    "AsyncStreamAdvisor",
    "AsyncStreamNext",
    "BaseAdvisor",
    "CallAdvisor",
    "CallNext",
    "ChatClientRequest",
    "ChatClientResponse",
    "ContextKeys",
    "StreamAdvisor",
    "StreamNext",
    "ToolAdvisor",
]


@dataclass(frozen=True, slots=True, init=False)
class ChatClientRequest:
    """The prompt plus a context map that advisors use to pass values along the chain.

    Both are immutable: use ``with_prompt``/``with_context`` to make the request for ``next_``.
    """

    prompt: Prompt
    context: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, prompt: Prompt, context: Mapping[str, Any] | None = None) -> None:
        # Each slot set through its descriptor: a frozen dataclass's own __init__ pays an
        # ``object.__setattr__`` per field (~1.5 k instructions more per request made, every round).
        _set_prompt(self, prompt)
        _set_request_context(self, {} if context is None else context)

    def with_prompt(self, prompt: Prompt) -> ChatClientRequest:
        return self if prompt is self.prompt else ChatClientRequest(prompt, self.context)

    def with_context(self, updates: Mapping[str, Any] | None = None, /, **values: Any) -> ChatClientRequest:
        return ChatClientRequest(self.prompt, {**self.context, **(updates or {}), **values})


@dataclass(frozen=True, slots=True, init=False)
class ChatClientResponse:
    """The model's reply plus the context as it was when the reply came back."""

    chat_response: ChatResponse | None
    context: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, chat_response: ChatResponse | None, context: Mapping[str, Any] | None = None) -> None:
        _set_chat_response(self, chat_response)  # as ChatClientRequest's: no object.__setattr__
        _set_response_context(self, {} if context is None else context)

    def with_chat_response(self, chat_response: ChatResponse | None) -> ChatClientResponse:
        return ChatClientResponse(chat_response, self.context)

    def with_context(self, updates: Mapping[str, Any] | None = None, /, **values: Any) -> ChatClientResponse:
        return ChatClientResponse(self.chat_response, {**self.context, **(updates or {}), **values})

    @property
    def text(self) -> str | None:
        """The text of the reply (``None`` when it has none, e.g. a turn paused for confirmation)."""
        chat = self.chat_response
        return chat.text if chat is not None else None

    @property
    def is_paused(self) -> bool:
        """True when the turn paused for a person's decision (see ``awaiting_decision``)."""
        return self.context.get(ContextKeys.PENDING_TOOL_CALLS) is not None

    def __repr__(self) -> str:
        from ._display import client_response_repr

        return client_response_repr(self)

    def _repr_markdown_(self) -> str:
        """A notebook shows the answer, or the table of calls a paused turn waits for."""
        from ._display import client_response_markdown

        return client_response_markdown(self)

    def _repr_html_(self) -> str:
        from ._display import client_response_html

        return client_response_html(self)


_set_prompt = ChatClientRequest.__dict__["prompt"].__set__
_set_request_context = ChatClientRequest.__dict__["context"].__set__
_set_chat_response = ChatClientResponse.__dict__["chat_response"].__set__
_set_response_context = ChatClientResponse.__dict__["context"].__set__


class AdvisorOrder:
    """Named orders with gaps. Memory wraps the tool loop; advisors above ``TOOL_CALLING`` sit inside
    it and see every round."""

    HIGHEST: Final = -(2**31)
    MEMORY: Final = HIGHEST + 200
    TOOL_CALLING: Final = HIGHEST + 300
    DEFAULT: Final = 0
    LOWEST: Final = 2**31 - 1


class ContextKeys:
    """Well-known keys of the request/response context."""

    TOOL_CALLING_AUTO_REGISTER: Final = "chatclient.tool_calling.auto_register"
    """Set to ``False`` (``.advisors(params={...})``) to run without the auto-registered tool loop."""
    OUTPUT_FORMAT: Final = "chatclient.output.format"
    """Format instructions appended to the last user message by the model call (``entity()``)."""
    OUTPUT_SCHEMA: Final = "chatclient.output.schema"
    """JSON schema for native structured output (``entity(..., native=True)``). When the model
    supports it, the model call sets ``options.output_schema`` instead of adding instructions."""
    PENDING_TOOL_CALLS: Final = "chatclient.tool_loop.pending"
    """On the response: the ``PendingToolCalls`` when the turn paused for confirmation. Nothing of the
    paused reply has run; advisors outside the loop (memory) should not store the turn yet."""
    RESUME: Final = "chatclient.tool_loop.resume"
    """On the request: ``(PendingToolCalls, ToolCallDecisions)`` set by ``resume(...)``; the loop runs
    the decided calls first, then goes on to the answer."""
    TURN: Final = "chatclient.turn"
    """On the response: the :class:`~chatclient.turn.Turn` (id and messages); read it with
    ``turn_messages(response)``."""
    TURN_ID: Final = "chatclient.turn.id"
    """On the request: the id to give the turn instead of a new random one (memory may set it)."""
    TOOL_LOOP_EXTENSIONS: Final = "chatclient.tool_loop.extensions"
    """On the request: extra ``ToolLoopExtension``s for this request's tool loop."""
    OBSERVERS: Final = "chatclient.observers"
    """On the request: the ``Observers`` of this request (instrumentation)."""


CallNext = Callable[[ChatClientRequest], ChatClientResponse]
StreamNext = Callable[[ChatClientRequest], Iterator[StreamEvent]]
AsyncCallNext = Callable[[ChatClientRequest], Awaitable[ChatClientResponse]]
AsyncStreamNext = Callable[[ChatClientRequest], AsyncIterator[StreamEvent]]


@runtime_checkable
class Advisor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def order(self) -> int: ...


@runtime_checkable
class CallAdvisor(Advisor, Protocol):
    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse: ...


@runtime_checkable
class StreamAdvisor(Advisor, Protocol):
    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]: ...


@runtime_checkable
class AsyncCallAdvisor(Advisor, Protocol):
    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse: ...


@runtime_checkable
class AsyncStreamAdvisor(Advisor, Protocol):
    def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]: ...


class ToolAdvisor:
    """Marker for the advisor that owns the tool loop; a chain holds at most one."""


class BaseAdvisor:
    """Write ``before`` and/or ``after`` once; get call, stream, and their async twins.

    In a stream, events pass through untouched as they arrive and ``after`` receives the final
    response (the one ``call()`` would return); what it returns is the stream's final response.
    Deltas already delivered cannot be taken back, so a rewrite of the text shows in the final
    response, not in the deltas.
    """

    order: int = AdvisorOrder.DEFAULT

    @property
    def name(self) -> str:
        return type(self).__name__

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        return response

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        return self.after(next_(self.before(request)))

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        return self.after(await next_(self.before(request)))

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        for event in next_(self.before(request)):
            yield TurnFinished(self.after(event.response)) if isinstance(event, TurnFinished) else event

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        async for event in next_(self.before(request)):
            yield TurnFinished(self.after(event.response)) if isinstance(event, TurnFinished) else event
