"""Structured output: the type's schema for the model, the reply's validation, and the attempts record.

Shared by ``entity()`` (which parses the final reply) and :class:`StructuredOutputValidationAdvisor`
(which re-asks the model while the reply does not validate), so both judge a reply the same way.
The advisor is an engine of the client's (``entity(T, retries=N)`` puts one in the request), so it
lives here, below the client; ``advisors.structured_output`` re-exports it for applications.
The advisor records what happened in the reply's metadata, under :data:`ATTEMPTS_METADATA_KEY`;
read it with :func:`structured_output_attempts`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from .advisor import AdvisorOrder, AsyncCallNext, AsyncStreamNext, CallNext, StreamNext
from .envelope import ChatClientRequest, ChatClientResponse, ContextKeys
from .errors import ConfigurationError, StructuredOutputError
from .events import StreamEvent, TurnFinished
from .messages import Message, UserMessage
from .prompt import Prompt
from .responses import ChatResponse, Usage
from .templates import PromptTemplate

__all__ = [
    "ATTEMPTS_METADATA_KEY",
    "ResponseEntity",
    "StructuredOutputAttempts",
    "StructuredOutputValidationAdvisor",
    "entity_context",
    "output_adapter",
    "parse_reply",
    "reask_prompt",
    "structured_output_attempts",
]

T = TypeVar("T")

ATTEMPTS_METADATA_KEY: Final = "structured_output"
"""Key in ``ChatResponseMetadata.extra`` of the final reply: ``{"attempts": n, "valid": bool,
"errors": [one text per rejected attempt]}``, set by ``StructuredOutputValidationAdvisor``."""

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


def output_adapter(type_: Any) -> TypeAdapter[Any]:
    """The (cached) pydantic adapter for ``type_``; one clear ``ConfigurationError`` when pydantic
    cannot make a JSON schema for it."""
    try:
        adapter = _adapter(type_)
        adapter.json_schema()
    except (PydanticUserError, TypeError) as exc:  # TypeError: an unhashable "type" in the cache
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigurationError(
            f"entity() cannot convert to {type_!r}: pydantic has no JSON schema for it ({first}); "
            "use a pydantic model, a dataclass, a TypedDict or a standard type. Nothing was sent."
        ) from exc
    return adapter


def entity_context(type_: Any, native: bool) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    """The adapter and the request context that asks the model for ``type_``."""
    adapter = output_adapter(type_)
    schema = adapter.json_schema()
    context: dict[str, Any] = {ContextKeys.OUTPUT_FORMAT: _FORMAT.format(schema=json.dumps(schema))}
    if native:
        context[ContextKeys.OUTPUT_SCHEMA] = schema
    return adapter, context


def parse_reply(adapter: TypeAdapter[T], chat: ChatResponse | None) -> T:
    """The reply's text (a markdown fence removed) validated as the adapter's type, or
    :class:`StructuredOutputError` listing every validation error, with the raw text."""
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


DEFAULT_REASK_TEMPLATE = PromptTemplate(
    "Attempt {attempt} of your reply was rejected: {error}\nReply again, fixing these errors."
)
"""What a re-ask tells the model; replace it with ``StructuredOutputValidationAdvisor(reask_template=...)``,
a template of the parameters ``attempt`` and ``error``."""


def reask_prompt(prompt: Prompt, error: str, attempt: int, template: PromptTemplate = DEFAULT_REASK_TEMPLATE) -> Prompt:
    """The prompt of the next attempt: what was wrong with the last reply (``template``), appended to
    the last user message (as Spring AI does), so it reaches the model with native structured output too."""
    fix = template.render(attempt=attempt, error=error)
    messages: list[Message] = list(prompt.messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, UserMessage):
            text = f"{message.text}\n\n{fix}" if message.text else fix
            messages[index] = message.model_copy(update={"text": text})
            return prompt.with_messages(messages)
    return prompt.with_messages([*messages, UserMessage(fix)])


@dataclass(frozen=True, slots=True)
class ResponseEntity(Generic[T]):
    """``response_entity(T)``: the converted reply and the response it came from (metadata, usage,
    the validation record)."""

    response: ChatClientResponse
    entity: T

    @property
    def attempts(self) -> StructuredOutputAttempts | None:
        return structured_output_attempts(self.response)


@dataclass(frozen=True, slots=True)
class StructuredOutputAttempts:
    """What the validation advisor did for one reply: replies asked for, whether the last one
    validated, and the errors of each rejected one, in order."""

    attempts: int
    valid: bool
    errors: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "valid": self.valid, "errors": list(self.errors)}


def structured_output_attempts(response: ChatClientResponse | ChatResponse | None) -> StructuredOutputAttempts | None:
    """The validation record of a final reply, or ``None`` when no validation advisor judged it."""
    chat = response.chat_response if isinstance(response, ChatClientResponse) else response
    record = chat.metadata.extra.get(ATTEMPTS_METADATA_KEY) if chat is not None else None
    if not isinstance(record, dict):
        return None
    errors = record.get("errors")
    return StructuredOutputAttempts(
        int(record.get("attempts") or 0),  # type: ignore[arg-type]
        bool(record.get("valid")),
        tuple(str(e) for e in errors) if isinstance(errors, list) else (),
    )


# ---------------------------------------------------------------------------- the advisor


DEFAULT_ORDER = AdvisorOrder.LOWEST - 2000


class StructuredOutputValidationAdvisor:
    """Validates each answer against ``output_type`` and asks again, with the errors appended to the
    last user message, up to ``max_repeat_attempts`` times (so at most ``max_repeat_attempts + 1``
    model calls per answer). An answer still invalid after that is returned as it is, recorded as
    invalid; ``entity()`` then raises ``StructuredOutputError`` with ``attempts`` set."""

    def __init__(
        self,
        output_type: Any,
        *,
        max_repeat_attempts: int = 3,
        order: int = DEFAULT_ORDER,
        reask_template: PromptTemplate | str = DEFAULT_REASK_TEMPLATE,
    ) -> None:
        if isinstance(max_repeat_attempts, bool) or not isinstance(max_repeat_attempts, int) or max_repeat_attempts < 0:
            raise ConfigurationError(f"max_repeat_attempts must be an int >= 0, got {max_repeat_attempts!r}")
        self.reask_template = PromptTemplate.of(reask_template).expecting("attempt", "error")
        """Tells the model what was wrong (parameters ``attempt`` and ``error``)."""
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
        template = self._advisor.reask_template
        return self._request.with_prompt(reask_prompt(self._request.prompt, error, len(self.errors), template))

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
