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

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Final, Protocol, runtime_checkable

from .envelope import ChatClientRequest, ChatClientResponse, ContextKeys  # re-exported: the same classes
from .events import StreamEvent, TurnFinished

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


class AdvisorOrder:
    """Named orders with gaps. Memory wraps the tool loop; advisors above ``TOOL_CALLING`` sit inside
    it and see every round."""

    HIGHEST: Final = -(2**31)
    MEMORY: Final = HIGHEST + 200
    TOOL_CALLING: Final = HIGHEST + 300
    DEFAULT: Final = 0
    LOWEST: Final = 2**31 - 1


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
