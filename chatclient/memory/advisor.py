"""``SessionMemoryAdvisor``: a conversation's history before each turn, the whole turn after it.

It sits outside the tool loop (``AdvisorOrder.MEMORY``). Before the turn it reads the view (the
last ``window`` messages, cut where a turn begins) and puts it between the system message and the
new user message. After the turn it appends every message of the turn (user message, each tool-call
message, each tool result, the answer) in one batch whose ids come from the turn id. While a
confirmation is pending it stores nothing; the resumed turn keeps its id, so it is written once
with those same ids and a retried resume cannot duplicate it. On a resume the prompt is the one the
turn began with (history included), so nothing is prepended twice.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from ..advisor import (
    AdvisorOrder,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    ContextKeys,
    StreamNext,
)
from ..errors import ConfigurationError
from ..events import StreamEvent, TurnFinished
from ..messages import Message, SystemMessage, UserMessage
from ..turn import turn_of
from .log import CONVERSATION_ID, NewEvent, SessionEvent, turn_events
from .repository import AsyncSessionRepository, SessionRepository
from .usage import usage_event
from .window import messages_of, read_size, window

__all__ = ["CONVERSATION_ID", "ConcurrencyPolicy", "SessionMemoryAdvisor"]

ConcurrencyPolicy = Literal["append", "raise"]
"""``append``: never lose a turn (the default); ``raise``: ``VersionConflict`` when another turn
was stored on the conversation after this one read its history (the turn is not stored)."""


@dataclass(frozen=True, slots=True)
class _Plan:
    conversation_id: str
    turn_id: str
    base_version: int | None
    new_messages: tuple[Message, ...]


class SessionMemoryAdvisor:
    """Memory for conversations, on any :class:`SessionRepository` (sync or async).

    ``window`` bounds the messages read per turn (``None``: the whole log); usage events take no
    message's place. The conversation id comes
    from the request: ``spec.conversation(id)`` (or the ``CONVERSATION_ID`` advisor param); a request
    without one is refused, never stored under a shared default.
    """

    def __init__(
        self,
        repository: SessionRepository | AsyncSessionRepository,
        *,
        window: int | None = 100,
        concurrency: ConcurrencyPolicy = "append",
        order: int = AdvisorOrder.MEMORY,
    ) -> None:
        if window is not None and window <= 0:
            raise ConfigurationError(f"window must be a positive number of events or None, got {window}")
        if concurrency not in ("append", "raise"):
            raise ConfigurationError(f"concurrency must be 'append' or 'raise', got {concurrency!r}")
        self.repository = repository
        self._async = asyncio.iscoroutinefunction(getattr(repository, "append", None))
        self.window, self.concurrency, self._order = window, concurrency, order

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def order(self) -> int:
        return self._order

    # ------------------------------------------------------------------ logic, written once

    @staticmethod
    def conversation_of(request: ChatClientRequest) -> str:
        conversation_id = request.context.get(CONVERSATION_ID)
        if not isinstance(conversation_id, str) or not conversation_id:
            raise ConfigurationError(
                "SessionMemoryAdvisor needs a conversation id: call spec.conversation(id) "
                f"(or pass advisors(params={{{CONVERSATION_ID!r}: id}}))"
            )
        return conversation_id

    def _plan(
        self, request: ChatClientRequest, events: Sequence[SessionEvent] | None
    ) -> tuple[ChatClientRequest, _Plan]:
        """The request with the history in it, and what to store after the turn. ``events`` is
        ``None`` on a resume (nothing read, nothing prepended)."""
        conversation_id = self.conversation_of(request)
        turn_id = request.context.get(ContextKeys.TURN_ID)
        if events is None:
            return request, _Plan(conversation_id, str(turn_id or ""), None, ())
        turn_id = turn_id or f"turn-{secrets.token_hex(12)}"
        base = events[-1].seq if events else 0
        prompt = request.prompt.messages
        split = next((i for i, m in enumerate(prompt) if not isinstance(m, SystemMessage)), len(prompt))
        history = messages_of(window(events, self.window)) if self.window is not None else messages_of(events)
        messages = (*prompt[:split], *history, *prompt[split:])
        context = {**request.context, ContextKeys.TURN_ID: turn_id}
        request = ChatClientRequest(request.prompt.with_messages(messages), context)
        return request, _Plan(conversation_id, turn_id, base, tuple(prompt[split:]))

    def _to_store(self, plan: _Plan, response: ChatClientResponse) -> list[NewEvent]:
        """The turn's events, its usage last; none while the turn waits for a confirmation."""
        if response.is_paused:
            return []
        turn = turn_of(response)
        if turn is not None:
            turn_id, events = turn.id, turn_events(turn.id, turn.messages)
        else:
            # No tool loop ran: the turn is the request's new messages and the answer.
            generation = response.chat_response.result if response.chat_response is not None else None
            answer = generation.output if generation is not None else None
            users = [m for m in plan.new_messages if isinstance(m, UserMessage)]
            turn_id = plan.turn_id
            events = turn_events(turn_id, [*users[-1:], *([answer] if answer is not None else [])])
        usage = usage_event(turn_id, response.chat_response)
        return [*events, usage] if usage is not None and events else events

    def _expected(self, plan: _Plan) -> int | None:
        return plan.base_version if self.concurrency == "raise" else None

    @staticmethod
    def _resuming(request: ChatClientRequest) -> bool:
        return request.context.get(ContextKeys.RESUME) is not None

    # ------------------------------------------------------------------ sync drivers

    def _sync_repository(self) -> SessionRepository:
        if self._async:
            raise ConfigurationError("An async session repository serves acall()/astream(); use a sync one for call()")
        return self.repository  # type: ignore[return-value]

    def _before(self, request: ChatClientRequest) -> tuple[ChatClientRequest, _Plan]:
        if self._resuming(request):
            return self._plan(request, None)
        repository = self._sync_repository()
        return self._plan(request, repository.events(self.conversation_of(request), last=read_size(self.window)))

    def _after(self, plan: _Plan, response: ChatClientResponse) -> ChatClientResponse:
        events = self._to_store(plan, response)
        if events:
            self._sync_repository().append(plan.conversation_id, events, expected_version=self._expected(plan))
        return response

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        request, plan = self._before(request)
        return self._after(plan, next_(request))

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        request, plan = self._before(request)
        for event in next_(request):
            yield TurnFinished(self._after(plan, event.response)) if isinstance(event, TurnFinished) else event

    # ------------------------------------------------------------------ async drivers

    async def _abefore(self, request: ChatClientRequest) -> tuple[ChatClientRequest, _Plan]:
        if self._resuming(request):
            return self._plan(request, None)
        conversation_id = self.conversation_of(request)
        if self._async:
            events = await self.repository.events(conversation_id, last=read_size(self.window))  # type: ignore[misc]
        else:
            repository: SessionRepository = self.repository  # type: ignore[assignment]
            events = await asyncio.to_thread(repository.events, conversation_id, last=read_size(self.window))
        return self._plan(request, events)

    async def _aafter(self, plan: _Plan, response: ChatClientResponse) -> ChatClientResponse:
        events = self._to_store(plan, response)
        if not events:
            return response
        expected = self._expected(plan)
        if self._async:
            await self.repository.append(plan.conversation_id, events, expected_version=expected)  # type: ignore[misc]
        else:
            repository: SessionRepository = self.repository  # type: ignore[assignment]
            await asyncio.to_thread(repository.append, plan.conversation_id, events, expected_version=expected)
        return response

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        request, plan = await self._abefore(request)
        return await self._aafter(plan, await next_(request))

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        request, plan = await self._abefore(request)
        async for event in next_(request):
            yield TurnFinished(await self._aafter(plan, event.response)) if isinstance(event, TurnFinished) else event
