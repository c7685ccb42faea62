"""Structured output: the type's schema for the model, the reply's validation, and the attempts record.

Shared by ``entity()`` (which parses the final reply) and ``StructuredOutputValidationAdvisor``
(which re-asks the model while the reply does not validate), so both judge a reply the same way.
The advisor records what happened in the reply's metadata, under :data:`ATTEMPTS_METADATA_KEY`;
read it with :func:`structured_output_attempts`.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from .advisor import ChatClientResponse, ContextKeys
from .errors import ConfigurationError, StructuredOutputError
from .messages import Message, UserMessage
from .prompt import Prompt
from .responses import ChatResponse

__all__ = [
    "ATTEMPTS_METADATA_KEY",
    "ResponseEntity",
    "StructuredOutputAttempts",
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


def reask_prompt(prompt: Prompt, error: str, attempt: int) -> Prompt:
    """The prompt of the next attempt: what was wrong with the last reply, appended to the last user
    message (as Spring AI does), so it reaches the model with native structured output too."""
    fix = f"Attempt {attempt} of your reply was rejected: {error}\nReply again, fixing these errors."
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
