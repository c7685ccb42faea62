"""``StructuredOutputValidationAdvisor``: re-ask the model, told the validation errors, until the reply
is the requested type (Spring AI's advisor of that name).

``spec.call().entity(T, retries=N)`` puts one in the request; it can also be registered like any
advisor. It sits inside the tool loop (Spring's order, ``AdvisorOrder.LOWEST - 2000``): a re-ask is
one more model call for the round being answered, so no tool runs twice and advisors between it and
the model (a higher order) see every attempt, while the tool loop, memory and the advisors outside
it see one validated reply. Replies that call tools are passed on unjudged.

Each final reply it judged carries the record in ``ChatResponseMetadata.extra["structured_output"]``
(``chatclient.structured_output.structured_output_attempts`` reads it), and its usage is the sum of
every attempt's. In ``stream()``/``astream()`` the deltas of a reply are delivered before it can be
judged, so a stream is judged once and not re-asked: the record says whether it validated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from chatclient.advisor import (
    AdvisorOrder,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    StreamNext,
)
from chatclient.errors import ConfigurationError, StructuredOutputError
from chatclient.events import StreamEvent, TurnFinished
from chatclient.responses import ChatResponse, Usage
from chatclient.structured_output import (
    ATTEMPTS_METADATA_KEY,
    StructuredOutputAttempts,
    output_adapter,
    parse_reply,
    reask_prompt,
)

__all__ = ["StructuredOutputValidationAdvisor"]

DEFAULT_ORDER = AdvisorOrder.LOWEST - 2000


class StructuredOutputValidationAdvisor:
    """Validates each answer against ``output_type`` and asks again, with the errors appended to the
    last user message, up to ``max_repeat_attempts`` times (so at most ``max_repeat_attempts + 1``
    model calls per answer). An answer still invalid after that is returned as it is, recorded as
    invalid; ``entity()`` then raises ``StructuredOutputError`` with ``attempts`` set."""

    def __init__(self, output_type: Any, *, max_repeat_attempts: int = 3, order: int = DEFAULT_ORDER) -> None:
        if isinstance(max_repeat_attempts, bool) or not isinstance(max_repeat_attempts, int) or max_repeat_attempts < 0:
            raise ConfigurationError(f"max_repeat_attempts must be an int >= 0, got {max_repeat_attempts!r}")
        self.output_type = output_type
        self.max_repeat_attempts = max_repeat_attempts
        self._adapter = output_adapter(output_type)
        self._order = order

    @property
    def name(self) -> str:
        return "StructuredOutputValidationAdvisor"

    @property
    def order(self) -> int:
        return self._order

    def error_of(self, chat: ChatResponse | None) -> str | None:
        """Why the reply is not the requested type, or ``None`` when it is."""
        try:
            parse_reply(self._adapter, chat)
        except StructuredOutputError as exc:
            return str(exc)
        return None

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        run = _Run(self, request)
        response = next_(request)
        while (again := run.next_request(response)) is not None:
            response = next_(again)
        return run.finish(response)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        run = _Run(self, request)
        response = await next_(request)
        while (again := run.next_request(response)) is not None:
            response = await next_(again)
        return run.finish(response)

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        for event in next_(request):
            yield TurnFinished(self._judged_once(request, event.response)) if isinstance(event, TurnFinished) else event

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        async for event in next_(request):
            yield TurnFinished(self._judged_once(request, event.response)) if isinstance(event, TurnFinished) else event

    def _judged_once(self, request: ChatClientRequest, response: ChatClientResponse) -> ChatClientResponse:
        run = _Run(self, request, max_repeats=0)
        run.next_request(response)
        return run.finish(response)


class _Run:
    """One answer being validated: the attempts so far, their errors and their summed usage."""

    __slots__ = ("_advisor", "_max", "_request", "errors", "judged", "usage", "valid")

    def __init__(
        self, advisor: StructuredOutputValidationAdvisor, request: ChatClientRequest, max_repeats: int | None = None
    ) -> None:
        self._advisor = advisor
        self._request = request
        self._max = advisor.max_repeat_attempts if max_repeats is None else max_repeats
        self.errors: list[str] = []
        self.usage: Usage | None = None
        self.judged = False
        self.valid = False

    def next_request(self, response: ChatClientResponse) -> ChatClientRequest | None:
        """The request of the next attempt, or ``None`` when this reply is the answer."""
        chat = response.chat_response
        if chat is not None and chat.metadata.usage is not None:
            self.usage = chat.metadata.usage if self.usage is None else self.usage + chat.metadata.usage
        if chat is not None and chat.has_tool_calls:
            self.judged = False  # a tool round (or a pause): the tool loop goes on, the answer comes later
            return None
        self.judged = True
        error = self._advisor.error_of(chat)
        if error is None:
            self.valid = True
            return None
        self.errors.append(error)
        if len(self.errors) > self._max:
            return None
        return self._request.with_prompt(reask_prompt(self._request.prompt, error, len(self.errors)))

    def finish(self, response: ChatClientResponse) -> ChatClientResponse:
        """The reply with every attempt's usage and, when it was judged, the record."""
        chat = response.chat_response
        if chat is None:
            return response
        attempts = len(self.errors) + (1 if self.valid else 0)
        updates: dict[str, Any] = {}
        if attempts > 1 or (not self.judged and self.errors):
            updates["usage"] = self.usage
        if self.judged:
            record = StructuredOutputAttempts(attempts, self.valid, tuple(self.errors))
            updates["extra"] = {**chat.metadata.extra, ATTEMPTS_METADATA_KEY: record.as_json()}
        if not updates:
            return response
        return response.with_chat_response(chat.with_metadata(**updates))
