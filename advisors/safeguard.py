"""``SafeGuardAdvisor``: a request with a sensitive word gets a fixed reply and never reaches the model."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Iterator

from chatclient.advisor import (
    AdvisorOrder,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    StreamNext,
)
from chatclient.events import StreamEvent, TextDelta, TurnFinished
from chatclient.responses import ChatResponse, FinishReason

__all__ = ["SafeGuardAdvisor"]

DEFAULT_REPLY = "I'm unable to respond to that due to sensitive content. Could we rephrase or discuss something else?"


class SafeGuardAdvisor:
    """Refuses a request whose messages contain one of ``sensitive_words`` (whole words, any case).

    The reply is ``reply`` with finish reason ``content_filter``; the model is not called. It runs
    first (``AdvisorOrder.HIGHEST`` + 100) so no other advisor spends anything on a refused request.
    """

    def __init__(
        self, sensitive_words: Iterable[str], *, reply: str = DEFAULT_REPLY, order: int = AdvisorOrder.HIGHEST + 100
    ) -> None:
        words = [w for w in sensitive_words if w.strip()]
        alternatives = "|".join(map(re.escape, words))
        self._pattern = re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE) if words else None
        self.reply = reply
        self.order = order

    @property
    def name(self) -> str:
        return "SafeGuardAdvisor"

    def blocks(self, request: ChatClientRequest) -> bool:
        """Whether the request holds a sensitive word."""
        if self._pattern is None:
            return False
        return any(self._pattern.search(getattr(m, "text", None) or "") for m in request.prompt.messages)

    def _refusal(self, request: ChatClientRequest) -> ChatClientResponse:
        reply = ChatResponse.of(self.reply, finish_reason=FinishReason.CONTENT_FILTER)
        return ChatClientResponse(reply, request.context)

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        return self._refusal(request) if self.blocks(request) else next_(request)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        return self._refusal(request) if self.blocks(request) else await next_(request)

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        if self.blocks(request):
            yield TextDelta(self.reply)
            yield TurnFinished(self._refusal(request))
            return
        yield from next_(request)

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        if self.blocks(request):
            yield TextDelta(self.reply)
            yield TurnFinished(self._refusal(request))
            return
        async for event in next_(request):
            yield event
