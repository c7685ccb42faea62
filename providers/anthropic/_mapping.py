"""Pure translation between chatclient types and the Anthropic Messages API (no I/O).

Shared by the sync and async paths, by the httpx2 transport and the official-SDK transport.
"""

from __future__ import annotations

import base64
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import httpx2
import pydantic_core
from pydantic import JsonValue

import chatclient._builders as built
from chatclient.errors import ConfigurationError, MalformedResponseError, ProviderError
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    ToolResultPart,
    UserMessage,
    provider_call_ids,
)
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import (
    ChatResponse,
    FinishReason,
    Usage,
    shared_generation_metadata,
)
from chatclient.tools.definition import ToolDefinition
from providers._arguments import arguments_object as _tool_input
from providers._errors import ErrorDetails, error_from_event, event_status, header_value
from providers._media import unsupported_media
from providers._per_options import PerOptions
from providers._reply_shape import as_object, optional_object
from providers._tool_rendering import TOOL_RENDERINGS

from .options import AnthropicChatOptions

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "PROVIDER",
    "THINKING_METADATA_KEY",
    "build_request",
    "error_details",
    "finish_reason",
    "parse_response",
    "parse_usage",
    "SERVER_BLOCKS_METADATA_KEY",
]

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 4096
"""Sent when the options set no ``max_tokens``: the API requires the field."""
THINKING_METADATA_KEY = "anthropic_thinking_blocks"
"""``AssistantMessage.metadata`` key holding the reply's ``thinking``/``redacted_thinking`` blocks.

The API requires them to be sent back unchanged (with their signatures) in the assistant turn that
precedes the tool results, so they travel with the message and are replayed by ``build_request``."""

SERVER_BLOCKS_METADATA_KEY = "anthropic_server_blocks"
"""``AssistantMessage.metadata`` key holding the reply's blocks of server-run tools (``server_tool_use``,
``web_search_tool_result``, ``code_execution_tool_result``...: every block type this mapping does not
model), in their order. They are sent back in the assistant turn after its thinking blocks and
before its text, so the next request carries the searches and results the answer was built on."""
_MODELLED_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})

_EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}

_FINISH_REASONS: dict[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}

_TOOL_CHOICES: dict[str, dict[str, Any]] = {
    "auto": {"type": "auto"},
    "any": {"type": "any"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}

# The HTTP status Anthropic documents for each error type: used for errors that arrive inside a 200
# stream (``event: error``), so they get the same class and retryability as the HTTP error would.


# ---------------------------------------------------------------------------------------------- request


def build_request(prompt: Prompt, options: ChatOptions | None, *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``POST /v1/messages`` for ``prompt`` under the effective ``options``.

    Common options the API has no field for (``frequency_penalty``, ``presence_penalty``) are not sent.
    What the body takes from the options alone is read from them once per options object
    (:class:`_OptionFields`); the messages and the tools are read on every request.
    """
    opts = options if options is not None else ChatOptions()
    if not opts.model:
        raise ConfigurationError("No Anthropic model given: pass model= to AnthropicChatModel or set options.model")
    fields = _OPTION_FIELDS.get(opts, stream)
    system, messages = _messages(prompt.messages)
    body: dict[str, Any] = {"model": opts.model, "max_tokens": fields.max_tokens}
    if system:
        body["system"] = _system(system, cache=fields.cache_system)
    body["messages"] = messages
    if fields.before_tools:
        body.update(fields.before_tools)
    if fields.has_tools:
        assert isinstance(opts, ToolCallingChatOptions)
        _add_tools(body, opts, opts if isinstance(opts, AnthropicChatOptions) else None)
    if fields.after_tools:
        body.update(fields.after_tools)
    return body


class _OptionFields(NamedTuple):
    """The body's fields that come from the options alone, in the body's order around the messages and tools."""

    max_tokens: int
    cache_system: bool
    before_tools: dict[str, Any]
    after_tools: dict[str, Any]
    has_tools: bool


def _option_fields(opts: ChatOptions, stream: Hashable) -> _OptionFields:
    anthropic = opts if isinstance(opts, AnthropicChatOptions) else None
    thinking_budget = anthropic.thinking_budget if anthropic is not None else None
    max_tokens = opts.max_tokens
    if max_tokens is None:
        # The budget counts towards max_tokens, which must exceed it.
        max_tokens = DEFAULT_MAX_TOKENS + (thinking_budget or 0)
    sampling: dict[str, Any] = {}
    _add_sampling(sampling, opts)
    after: dict[str, Any] = {}
    if opts.output_schema is not None:
        after["output_config"] = {"format": {"type": "json_schema", "schema": strict_schema(opts.output_schema)}}
    if anthropic is not None:
        _add_anthropic(after, anthropic)
    if stream:
        after["stream"] = True
    has_tools = isinstance(opts, ToolCallingChatOptions) and bool(opts.tool_callbacks)
    cache_system = bool(anthropic is not None and anthropic.cache_system_prompt)
    return _OptionFields(max_tokens, cache_system, sampling, after, has_tools)


_OPTION_FIELDS = PerOptions(_option_fields)


def _add_sampling(body: dict[str, Any], opts: ChatOptions) -> None:
    if opts.temperature is not None:
        body["temperature"] = opts.temperature
    if opts.top_p is not None:
        body["top_p"] = opts.top_p
    if opts.top_k is not None:
        body["top_k"] = opts.top_k
    if opts.stop_sequences:
        body["stop_sequences"] = list(opts.stop_sequences)


def _add_anthropic(body: dict[str, Any], anthropic: AnthropicChatOptions) -> None:
    if anthropic.thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": anthropic.thinking_budget}
    if anthropic.user_id is not None:
        body["metadata"] = {"user_id": anthropic.user_id}
    if anthropic.service_tier is not None:
        body["service_tier"] = anthropic.service_tier


def _add_tools(body: dict[str, Any], opts: ToolCallingChatOptions, anthropic: AnthropicChatOptions | None) -> None:
    # Rendered once per tool set and cache mark, then reused by every call and round.
    cache = bool(anthropic is not None and anthropic.cache_tools)
    body["tools"] = TOOL_RENDERINGS.render(opts.tool_callbacks, _render_tools, cache)
    choice = opts.tool_choice
    tool_choice: dict[str, Any] | None = None
    if choice is not None:
        tool_choice = dict(_TOOL_CHOICES.get(choice) or {"type": "tool", "name": choice})
    if anthropic is not None and anthropic.disable_parallel_tool_use is not None:
        tool_choice = tool_choice or {"type": "auto"}
        if tool_choice["type"] != "none":
            tool_choice["disable_parallel_tool_use"] = anthropic.disable_parallel_tool_use
    if tool_choice is not None:
        body["tool_choice"] = tool_choice


def _render_tools(definitions: Sequence[ToolDefinition], cache: bool) -> list[dict[str, Any]]:
    """The ``tools`` array; ``cache`` marks the last tool, so the whole list is one cached prefix."""
    tools = [{"name": d.name, "description": d.description, "input_schema": d.input_schema} for d in definitions]
    if cache:
        tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
    return tools


def _system(texts: list[str], *, cache: bool) -> str | list[dict[str, Any]]:
    if len(texts) == 1 and not cache:
        return texts[0]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
    if cache:
        blocks[-1]["cache_control"] = _EPHEMERAL
    return blocks


def _messages(messages: Sequence[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """System texts (hoisted: the API has no system role inside ``messages``) and the API messages.

    Consecutive messages of one role are merged into one, as the API requires: all tool results of a
    round are one user message, and a user text that follows them joins that message after them.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    for message in messages:
        if isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message)
        elif isinstance(message, AssistantMessage):
            role, blocks = "assistant", _assistant_blocks(message)
            call_ids = provider_call_ids(message)  # its results go back under the provider's ids
        elif isinstance(message, ToolResponseMessage):
            role, blocks = "user", [_tool_result(r, call_ids.get(r.id, r.id)) for r in message.responses]
        elif isinstance(message, SystemMessage):
            system.append(message.text)
            continue
        else:  # pragma: no cover - Message is a closed union
            raise ConfigurationError(f"Unsupported message type {type(message).__name__}")
        if not blocks:
            continue  # the API rejects empty content (e.g. an assistant reply with no text and no calls)
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for message_dict in out:
        content = message_dict["content"]
        if len(content) == 1 and content[0]["type"] == "text":
            message_dict["content"] = content[0]["text"]  # the compact form for a plain text turn
    return system, out


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    thinking = message.metadata.get(THINKING_METADATA_KEY)
    if isinstance(thinking, list):
        blocks.extend(block for block in thinking if isinstance(block, dict))
    server_blocks = message.metadata.get(SERVER_BLOCKS_METADATA_KEY)
    if isinstance(server_blocks, list):
        blocks.extend(block for block in server_blocks if isinstance(block, dict))
    if message.text:  # empty text blocks are rejected by the API
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        tool_use = {"type": "tool_use", "id": call.provider_id, "name": call.name, "input": _tool_input(call.arguments)}
        blocks.append(tool_use)
    return blocks


def _tool_result(response: ToolResponse, tool_use_id: str) -> dict[str, Any]:
    """A ``tool_result`` block: a text result as a string, a ``ToolResult``'s parts as content blocks."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if response.parts:
        content = [wire for part in response.parts if (wire := _tool_result_content(part)) is not None]
        if content:
            block["content"] = content
    elif response.response_data:  # ``content`` is optional; an empty text would be rejected
        block["content"] = response.response_data
    if response.is_error:
        block["is_error"] = True
    return block


_IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The inline image types the API accepts; any other is sent as its text placeholder."""


def _tool_result_content(part: ToolResultPart) -> dict[str, Any] | None:
    """One block of a ``tool_result``'s content, which takes ``text``, ``image`` and ``document`` blocks.

    Images: base64 (JPEG, PNG, GIF, WebP) or a URL. Documents: a PDF (base64 or URL) or plain text.
    Anything else (another image or file type) becomes a text block with the part's placeholder, so
    the model knows something was returned that it cannot see. Empty texts are dropped: the API
    rejects empty text blocks.
    """
    if isinstance(part, (ImagePart, FilePart)) and (block := _media_block(part)) is not None:
        return block
    text = part.as_text()
    return {"type": "text", "text": text} if text else None


def _media_block(part: ImagePart | FilePart) -> dict[str, Any] | None:
    """The ``image`` or ``document`` block for ``part`` (tool results and user messages take the same
    ones), or ``None`` for a kind the API does not take."""
    if isinstance(part, ImagePart):
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        if part.media_type in _IMAGE_MEDIA_TYPES:
            return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": part.data}}
        return None
    document = _document_source(part)
    if document is None:
        return None
    return {"type": "document", "source": document} | ({"title": part.filename} if part.filename else {})


_TAKES = (
    "the API takes JPEG, PNG, GIF and WebP images (URL or base64), PDF documents (URL or base64) "
    "and plain text documents (base64)"
)


def _untaken_image_type(part: ImagePart | FilePart) -> bool:
    """An image declared as a type the API does not take: refused by URL too (the API would reject it)."""
    return isinstance(part, ImagePart) and part.media_type is not None and part.media_type not in _IMAGE_MEDIA_TYPES


def _user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    """A user message's blocks: its images and documents first (the API's guidance: a model reads
    them best before the question), then the text (dropped when empty: the API rejects it)."""
    blocks: list[dict[str, Any]] = []
    for part in message.media:
        block = None if _untaken_image_type(part) else _media_block(part)
        if block is None:
            raise unsupported_media("Anthropic", part, _TAKES)
        blocks.append(block)
    if message.text or not blocks:
        blocks.append({"type": "text", "text": message.text})
    return blocks


def _document_source(part: FilePart) -> dict[str, Any] | None:
    if part.url is not None:
        return {"type": "url", "url": part.url} if part.media_type in (None, "application/pdf") else None
    if part.media_type == "application/pdf":
        return {"type": "base64", "media_type": "application/pdf", "data": part.data}
    if part.media_type == "text/plain" and part.data is not None:
        text = base64.b64decode(part.data).decode("utf-8", errors="replace")
        return {"type": "text", "media_type": "text/plain", "data": text}
    return None


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``additionalProperties: false`` on every object, which the API's structured output
    requires (the official SDK's ``transform_schema`` does the same). Other keywords are sent as they are."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, Mapping):
            out[key] = {k: strict_schema(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") and isinstance(value, list):
            out[key] = [strict_schema(v) if isinstance(v, Mapping) else v for v in value]
        elif key == "items" and isinstance(value, Mapping):
            out[key] = strict_schema(value)
        else:
            out[key] = value
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


# --------------------------------------------------------------------------------------------- response


def finish_reason(raw: str | None) -> FinishReason | None:
    """``stop_reason`` in our vocabulary; unknown reasons (``pause_turn``, new ones) are ``OTHER``."""
    if raw is None:
        return None
    return _FINISH_REASONS.get(raw, FinishReason.OTHER)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def parse_usage(usage: Mapping[str, Any]) -> Usage:
    """Anthropic's ``input_tokens`` excludes the cached part; ``prompt_tokens`` is the whole input
    (``input + cache_creation + cache_read``), so the cache counts are subsets of it as with OpenAI."""
    # ``_int`` written out: every reply reads these four counts.
    cache_write = usage.get("cache_creation_input_tokens")
    cache_write = cache_write if isinstance(cache_write, int) else 0
    cache_read = usage.get("cache_read_input_tokens")
    cache_read = cache_read if isinstance(cache_read, int) else 0
    details = usage.get("output_tokens_details")
    thinking = _int(details.get("thinking_tokens")) if isinstance(details, dict) else 0
    given, produced = usage.get("input_tokens"), usage.get("output_tokens")
    prompt = (given if isinstance(given, int) else 0) + cache_write + cache_read
    completion = produced if isinstance(produced, int) else 0
    # ``reasoning_tokens`` is a part of output_tokens, as OpenAI's reasoning_tokens.
    if (
        type(prompt) is int
        and type(completion) is int
        and type(cache_read) is int
        and type(cache_write) is int
        and type(thinking) is int
    ):  # checked inline (a bool is validated below): built without validating again (chatclient._builders)
        return built.usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cache_read,
                           cache_write_tokens=cache_write, reasoning_tokens=thinking)  # fmt: skip
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cache_read,
                 cache_write_tokens=cache_write, reasoning_tokens=thinking)  # fmt: skip


def _generation_extra(raw_reason: Any, stop_sequence: Any) -> dict[str, JsonValue]:
    extra: dict[str, JsonValue] = {}
    if isinstance(raw_reason, str):
        extra["raw_finish_reason"] = raw_reason
    if isinstance(stop_sequence, str):
        extra["stop_sequence"] = stop_sequence
    return extra


def _response_extra(request_id: str | None) -> dict[str, JsonValue]:
    return {"request_id": request_id} if request_id else {}


def parse_response(data: Any, headers: Mapping[str, str] | httpx2.Headers | None = None) -> ChatResponse:
    """A complete (non-streamed) Messages reply as a ``ChatResponse``."""
    if not isinstance(data, dict):
        raise MalformedResponseError(f"Expected a JSON object, got {type(data).__name__}", provider=PROVIDER)
    if data.get("type") == "error":
        raise stream_error(data)
    content = data.get("content")
    if not isinstance(content, list):
        raise MalformedResponseError("The reply has no 'content' list", provider=PROVIDER, body=data)
    if not content and not isinstance(data.get("stop_reason"), str):
        # Empty content is a documented answer (``end_turn`` after a tool result, ``max_tokens``);
        # without a stop reason it is no finished message at all.
        raise MalformedResponseError(
            "The reply's 'content' is empty and it has no 'stop_reason': not a finished message",
            provider=PROVIDER,
            body=data,
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[JsonValue] = []
    server_blocks: list[JsonValue] = []
    saw_text = False
    for block in content:
        if not isinstance(block, dict):
            raise MalformedResponseError("A content block is not an object", provider=PROVIDER, body=data)
        kind = block.get("type")
        if kind == "text":
            saw_text = True
            texts.append(_str(block, "text", data))
        elif kind == "tool_use":
            given = as_object(block.get("input") or {}, "a tool_use block's 'input'", PROVIDER, data)
            arguments = pydantic_core.to_json(given).decode()
            calls.append(ToolCall(id=call_id(block, data), name=_str(block, "name", data), arguments=arguments))
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(block)
        else:  # server tool use and results, and block types yet to come: kept, to be sent back
            server_blocks.append(block)
    # Every value below is checked here (strings by _str, blocks kept as parsed JSON), so the models
    # are built without validating them again (chatclient._builders).
    metadata = _blocks_metadata(thinking, server_blocks)
    text = "".join(texts) if saw_text else None
    message = built.assistant_message(role="assistant", text=text, tool_calls=tuple(calls), metadata=metadata)
    raw_reason = data.get("stop_reason")
    reason = finish_reason(raw_reason if isinstance(raw_reason, str) else None)
    stop_sequence = data.get("stop_sequence")
    if raw_reason in _FINISH_REASONS and not isinstance(stop_sequence, str):  # the usual reply: one for all
        generation_metadata = shared_generation_metadata(reason, raw_reason)
    else:
        extra = _generation_extra(raw_reason, stop_sequence)
        generation_metadata = built.generation_metadata(finish_reason=reason, extra=extra)
    generation = built.generation(output=message, metadata=generation_metadata)
    usage = optional_object(data.get("usage"), "'usage'", PROVIDER, data)
    request_id = header_value(headers, b"request-id")
    reply_id, model = data.get("id"), data.get("model")
    response_metadata = built.response_metadata(
        id=reply_id if isinstance(reply_id, str) else None,
        model=model if isinstance(model, str) else None,
        usage=parse_usage(usage) if usage is not None else None,
        extra=_response_extra(request_id),
    )
    return built.chat_response(generations=(generation,), metadata=response_metadata)


def _blocks_metadata(thinking: list[JsonValue], server_blocks: list[JsonValue]) -> dict[str, JsonValue]:
    metadata: dict[str, JsonValue] = {}
    if thinking:
        metadata[THINKING_METADATA_KEY] = thinking
    if server_blocks:
        metadata[SERVER_BLOCKS_METADATA_KEY] = server_blocks
    return metadata


def call_id(block: Mapping[str, Any], body: Any) -> str:
    """A ``tool_use`` block's id; ``""`` when a compatible server left it out or empty (the reply then
    gives the call an id of its own: ``chatclient.messages.CallIds``)."""
    value = block.get("id")
    return "" if value is None else _str(block, "id", body)


def _str(block: Mapping[str, Any], key: str, body: Any) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise MalformedResponseError(
            f"A {block.get('type')!r} block has no string {key!r}", provider=PROVIDER, body=body
        )
    return value


# ----------------------------------------------------------------------------------------------- errors


def error_details(body: Any) -> ErrorDetails | None:
    """Facts from ``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    error_type = error.get("type")
    request_id = body.get("request_id")
    return ErrorDetails(
        message=message if isinstance(message, str) and message else "Anthropic API error",
        error_type=error_type if isinstance(error_type, str) else None,
        request_id=request_id if isinstance(request_id, str) else None,
    )


def stream_error(data: Mapping[str, Any], request_id: str | None = None) -> ProviderError:
    """The error for an ``event: error`` inside a stream, classed like the HTTP error of that type."""
    found = error_details(data)
    status = (event_status(found) if found is not None else None) or 500  # each type stands for a status
    headers = httpx2.Headers({"request-id": request_id} if request_id else {})
    return error_from_event(PROVIDER, data, error_details, status=status, headers=headers)
