"""Bedrock ``Converse`` replies read into our types: the reply side of the wire mapping (the request
side is not written yet). Pure functions; see ``_stream_parser`` for ``ConverseStream``.

Reasoning blocks (``reasoningContent``: signed text, or redacted bytes) must go back to the API as
they came on the next turn of a tool round, so they are kept, exactly as the wire gave them, in the
assistant message's metadata under :data:`REASONING_METADATA_KEY`; their text is not the reply's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
import pydantic_core
from pydantic import JsonValue

from chatclient.errors import MalformedResponseError
from chatclient.messages import AssistantMessage, CallIds, ToolCall
from chatclient.responses import (
    ChatResponse,
    ChatResponseMetadata,
    FinishReason,
    Generation,
    GenerationMetadata,
    Usage,
)
from providers._errors import header_value
from providers._reply_shape import as_object, optional_object

__all__ = [
    "PROVIDER",
    "REASONING_METADATA_KEY",
    "finish_reason",
    "generation_metadata",
    "parse_response",
    "parse_usage",
    "response_extra",
]

PROVIDER = "bedrock"
REASONING_METADATA_KEY = "bedrock_reasoning_blocks"
"""The ``reasoningContent`` blocks of a reply, as the wire gave them, to be sent back as they were."""

_FINISH_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "content_filtered": FinishReason.CONTENT_FILTER,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
}


def finish_reason(raw: str | None) -> FinishReason | None:
    """``stopReason`` in our vocabulary; reasons not known here are ``OTHER``."""
    if raw is None:
        return None
    return _FINISH_REASONS.get(raw, FinishReason.OTHER)


def generation_metadata(raw: Any) -> GenerationMetadata:
    reason = raw if isinstance(raw, str) else None
    extra: dict[str, JsonValue] = {"raw_finish_reason": reason} if reason is not None else {}
    return GenerationMetadata(finish_reason=finish_reason(reason), extra=extra)


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def parse_usage(usage: Mapping[str, Any]) -> Usage:
    """Bedrock's ``inputTokens`` leaves out the cached part (as Anthropic's ``input_tokens`` does):
    ``prompt_tokens`` is the whole input, the cache counts subsets of it."""
    cache_read, cache_write = _count(usage, "cacheReadInputTokens"), _count(usage, "cacheWriteInputTokens")
    return Usage(
        prompt_tokens=_count(usage, "inputTokens") + cache_read + cache_write,
        completion_tokens=_count(usage, "outputTokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def response_extra(request_id: str | None) -> dict[str, JsonValue]:
    return {"request_id": request_id} if request_id else {}


def _text(block: Mapping[str, Any], key: str, body: Any) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise MalformedResponseError(f"A content block has no string {key!r}", provider=PROVIDER, body=body)
    return value


def parse_response(data: Any, headers: Mapping[str, str] | httpx2.Headers | None = None) -> ChatResponse:
    """A complete ``Converse`` reply (``{"output": {"message": ...}, "stopReason", "usage"}``)."""
    reply = as_object(data, "the reply", PROVIDER, data)
    output = as_object(reply.get("output"), "the reply's 'output'", PROVIDER, data)
    message = as_object(output.get("message"), "the reply's 'output.message'", PROVIDER, data)
    content = message.get("content")
    if not isinstance(content, list):
        raise MalformedResponseError("The reply's message has no 'content' list", provider=PROVIDER, body=data)
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[JsonValue] = []
    ids = CallIds()
    for block in content:
        if not isinstance(block, dict):
            raise MalformedResponseError("A content block is not an object", provider=PROVIDER, body=data)
        if "text" in block:
            texts.append(_text(block, "text", data))
        elif "toolUse" in block:
            use = as_object(block["toolUse"], "a 'toolUse' block", PROVIDER, data)
            given = use.get("toolUseId")
            wire_id = given if isinstance(given, str) else ""
            arguments = pydantic_core.to_json(as_object(use.get("input") or {}, "a toolUse's 'input'", PROVIDER, data))
            own = ids.assign(wire_id)
            calls.append(
                ToolCall(
                    id=own,
                    name=_text(use, "name", data),
                    arguments=arguments.decode(),
                    wire_id=None if own == wire_id else wire_id,
                )
            )
        elif "reasoningContent" in block:
            reasoning.append(block)
    metadata: dict[str, JsonValue] = {REASONING_METADATA_KEY: reasoning} if reasoning else {}
    text = "".join(texts) if texts else None
    generation = Generation(
        AssistantMessage(text, tool_calls=tuple(calls), metadata=metadata), generation_metadata(reply.get("stopReason"))
    )
    usage = optional_object(reply.get("usage"), "'usage'", PROVIDER, data)
    return ChatResponse(
        (generation,),
        ChatResponseMetadata(
            usage=parse_usage(usage) if usage is not None else None,
            extra=response_extra(header_value(headers, b"x-amzn-requestid")),
        ),
    )
