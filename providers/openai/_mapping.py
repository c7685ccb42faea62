"""Pure translation between chatclient types and the Chat Completions wire format (no I/O).

Shared by the sync and async paths and by the official-SDK transport. Unknown fields in replies
are ignored; a reply that does not have the expected shape raises ``MalformedResponseError``.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import pydantic_core
from pydantic import JsonValue

import chatclient._builders as built
from chatclient.errors import (
    MalformedResponseError,
    ProviderError,
)
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    provider_call_ids,
)
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import (
    ChatResponse,
    ChatResponseMetadata,
    FinishReason,
    Usage,
    shared_generation_metadata,
)
from chatclient.tools.definition import ToolDefinition
from providers._errors import ErrorDetails, error_from_event, header_value
from providers._media import unsupported_media
from providers._per_options import PerOptions
from providers._reply_shape import as_list, as_object, optional_object, shape_error
from providers._tool_rendering import TOOL_RENDERINGS

__all__ = [
    "PROVIDER",
    "REASONING_FIELD_KEY",
    "build_request",
    "error_details",
    "finish_reason",
    "parse_response",
    "parse_usage",
    "split_content",
    "strict_schema",
]

PROVIDER = "openai"

_FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}
_REASONING_KEYS = ("reasoning_content", "reasoning")
"""Non-standard reasoning text: ``reasoning_content`` (DeepSeek, vLLM), ``reasoning`` (Ollama, OpenRouter)."""
REASONING_FIELD_KEY = "reasoning_field"
"""Message metadata key naming the wire field the server sent its reasoning in (one of
``_REASONING_KEYS``): an assistant turn with tool calls sends ``metadata["reasoning"]`` back under
that field, as DeepSeek's thinking mode requires (it answers 400 without it)."""
_SCHEMA_NAME = r"[^a-zA-Z0-9_-]"
"""What a ``json_schema.name`` may not hold (compiled by ``re`` on first use: only structured output needs it)."""


# ---------------------------------------------------------------------- request


def build_request(
    prompt: Prompt, options: ChatOptions, *, stream: bool, openai_platform: bool = True
) -> dict[str, Any]:
    """The request body for ``prompt`` with ``options`` (already merged over the model's defaults).

    ``openai_platform`` is true for OpenAI and Azure OpenAI: ``max_tokens`` is then sent as
    ``max_completion_tokens`` and ``top_k`` is left out (both for compatibility, see the options).
    What the body takes from the options alone is read from them once per options object
    (:class:`_OptionFields`); the messages and the tools are read on every request.
    """
    fields = _OPTION_FIELDS.get(options, (stream, openai_platform))
    messages = _messages(prompt.messages)
    if fields.tool_call_content != "empty":
        _tool_call_content(messages, fields.tool_call_content)
    body: dict[str, Any] = {"model": options.model, "messages": messages, **fields.before_tools}
    if fields.has_tools:
        _tools(body, options)
    if fields.after_tools:
        body.update(fields.after_tools)
    return body


class _OptionFields(NamedTuple):
    """The body's fields that come from the options alone, in the body's order around the tools."""

    before_tools: dict[str, Any]
    after_tools: dict[str, Any]
    has_tools: bool
    tool_call_content: str


def _option_fields(options: ChatOptions, variant: Hashable) -> _OptionFields:
    assert isinstance(variant, tuple)
    stream: bool = variant[0]
    openai_platform: bool = variant[1]
    before: dict[str, Any] = {}
    if stream:
        before["stream"] = True
        if getattr(options, "stream_include_usage", True):
            before["stream_options"] = {"include_usage": True}
    _sampling(before, options, openai_platform)
    after: dict[str, Any] = {}
    schema = options.output_schema
    if schema is not None:
        after["response_format"] = _response_format(schema, options)
    elif (response_format := getattr(options, "response_format", None)) is not None:
        after["response_format"] = response_format
    for name in ("seed", "reasoning_effort", "user", "logit_bias", "logprobs", "top_logprobs", "n"):
        if (value := getattr(options, name, None)) is not None:
            after[name] = value
    for name in ("service_tier", "store", "metadata"):
        if (value := getattr(options, name, None)) is not None:
            after[name] = value
    form = getattr(options, "tool_call_content", "empty")
    return _OptionFields(before, after, bool(getattr(options, "tool_callbacks", ())), form)


_OPTION_FIELDS = PerOptions(_option_fields)


def _sampling(body: dict[str, Any], options: ChatOptions, openai_platform: bool) -> None:
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.top_k is not None and not openai_platform:
        body["top_k"] = options.top_k
    if options.frequency_penalty is not None:
        body["frequency_penalty"] = options.frequency_penalty
    if options.presence_penalty is not None:
        body["presence_penalty"] = options.presence_penalty
    if options.stop_sequences:
        body["stop"] = list(options.stop_sequences)
    max_completion = getattr(options, "max_completion_tokens", None)
    if max_completion is not None:
        body["max_completion_tokens"] = max_completion
    elif options.max_tokens is not None:
        body["max_completion_tokens" if openai_platform else "max_tokens"] = options.max_tokens


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}  # the last reply's replaced ids: its results go back under the provider's
    for message in messages:
        if isinstance(message, AssistantMessage):
            wire.append(_assistant(message))
            call_ids = provider_call_ids(message)
        elif isinstance(message, ToolResponseMessage):
            wire.extend(
                {"role": "tool", "tool_call_id": call_ids.get(r.id, r.id), "content": _tool_content(r)}
                for r in message.responses
            )
        elif isinstance(message, UserMessage) and message.media:
            wire.append({"role": "user", "content": _user_content(message)})
        else:
            wire.append({"role": message.role, "content": message.text})
    return wire


_IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
_TAKES = (
    "Chat Completions takes PNG, JPEG, WebP and GIF images (URL or base64) and PDF documents as base64 "
    "data only; send a text file's contents as text, or use the Responses API for other files"
)


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    """A user message's content parts: its text, then an ``image_url`` part per image (a URL or a
    ``data:`` URL) and a ``file`` part per PDF (``file_data`` as a ``data:`` URL with a filename), as
    the API documents them. File URLs and non-PDF files are refused: the API takes neither."""
    content: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    for part in message.media:
        # An image URL without a declared type is the API's to read; inline data always has its type.
        if isinstance(part, ImagePart) and (part.media_type or "image/png") in _IMAGE_MEDIA_TYPES:
            content.append({"type": "image_url", "image_url": {"url": part.data_url}})
        elif isinstance(part, FilePart) and part.data is not None and part.media_type == "application/pdf":
            file = {"filename": part.filename or "document.pdf", "file_data": part.data_url}
            content.append({"type": "file", "file": file})
        else:
            raise unsupported_media("OpenAI Chat Completions", part, _TAKES)
    return content


_MEDIA_NOTE = (
    "[Note: the tool also returned {what}, shown above by placeholder only: "
    "tool results in this API carry text only, so you cannot see their content.]"
)


def _tool_content(response: ToolResponse) -> str:
    """A tool message's content: the result's text form, with a note when images or files were left out.

    Chat Completions takes only text in a ``tool`` message (images go in ``user`` messages only), so
    a ``ToolResult``'s images and files appear as their placeholders, and the note tells the model
    it cannot see them rather than letting it guess at their content.
    """
    images = sum(isinstance(part, ImagePart) for part in response.parts)
    files = sum(isinstance(part, FilePart) for part in response.parts)
    if not images and not files:
        return response.response_data
    what = " and ".join(f"{n} {kind}{'s' if n > 1 else ''}" for n, kind in ((images, "image"), (files, "file")) if n)
    return f"{response.response_data}\n{_MEDIA_NOTE.format(what=what)}"


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.text or ""}
    # ``content`` is always a string, "" without text: llama.cpp's server (and chat templates that
    # read ``message.content``) answer 500 to a missing or null content; see ``tool_call_content``.
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or ""}
    field = message.metadata.get(REASONING_FIELD_KEY)
    reasoning = message.metadata.get("reasoning")
    if field in _REASONING_KEYS and isinstance(reasoning, str) and reasoning:
        # Only on tool-call turns: the reasoning belongs to the round the tool results continue.
        entry[field] = reasoning
    entry["tool_calls"] = [
        {
            "id": call.provider_id,
            "type": call.type or "function",
            # A call without arguments may have streamed none: the API wants a JSON string.
            "function": {"name": call.name, "arguments": call.arguments or "{}"},
        }
        for call in message.tool_calls
    ]
    return entry


def _tool_call_content(messages: list[dict[str, Any]], form: str) -> None:
    """Rewrites the text-less content of assistant tool-call messages for a server that wants
    ``null`` (``form="null"``) or no ``content`` at all (``form="omit"``) instead of ``""``."""
    for entry in messages:
        if entry["role"] == "assistant" and "tool_calls" in entry and entry.get("content") == "":
            if form == "null":
                entry["content"] = None
            else:
                del entry["content"]


def _tools(body: dict[str, Any], options: ChatOptions) -> None:
    callbacks = getattr(options, "tool_callbacks", ())
    if not callbacks:
        return
    # Rendered once per tool set and strict mode, then reused by every call and round.
    body["tools"] = TOOL_RENDERINGS.render(callbacks, _render_tools, getattr(options, "strict_tools", None))
    choice = getattr(options, "tool_choice", None)
    if choice is not None:
        if choice in ("auto", "none", "required"):
            body["tool_choice"] = choice
        else:
            body["tool_choice"] = {"type": "function", "function": {"name": choice}}
    parallel = getattr(options, "parallel_tool_calls", None)
    if parallel is not None:
        body["parallel_tool_calls"] = parallel


def _render_tools(definitions: Sequence[ToolDefinition], strict: bool | None) -> list[dict[str, Any]]:
    """The ``tools`` array; strict mode closes every object of each schema, as the API requires."""
    tools = []
    for definition in definitions:
        function: dict[str, Any] = {
            "name": definition.name,
            "description": definition.description,
            "parameters": strict_schema(definition.input_schema) if strict else definition.input_schema,
        }
        if strict is not None:
            function["strict"] = strict
        tools.append({"type": "function", "function": function})
    return tools


def _response_format(schema: dict[str, JsonValue], options: ChatOptions) -> dict[str, Any]:
    name = getattr(options, "output_schema_name", None)
    if name is None:
        title = schema.get("title")
        name = re.sub(_SCHEMA_NAME, "_", title)[:64] if isinstance(title, str) and title else "output"
    strict = getattr(options, "strict_output_schema", None)
    spec: dict[str, Any] = {"name": name, "schema": strict_schema(schema) if strict else schema}
    description = schema.get("description")
    if isinstance(description, str):
        spec["description"] = description
    if strict is not None:
        spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec}


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` with ``additionalProperties: false`` on every object that does not say,
    as OpenAI's strict mode requires. Nothing else is changed."""
    return _strict(schema)  # type: ignore[no-any-return]


def _strict(node: Any) -> Any:
    if isinstance(node, Mapping):
        copy = {key: _strict(value) for key, value in node.items()}
        if copy.get("type") == "object" and "additionalProperties" not in copy:
            copy["additionalProperties"] = False
        return copy
    if isinstance(node, list):
        return [_strict(item) for item in node]
    return node


# ---------------------------------------------------------------------- replies


def finish_reason(raw: Any, has_tool_calls: bool) -> FinishReason | None:
    """Our reason for the API's. Some compatible servers say ``stop`` after tool calls: that is
    reported as ``TOOL_CALLS`` (the raw value is kept beside it)."""
    if raw is None:
        return None
    reason = _FINISH_REASONS.get(raw, FinishReason.OTHER)
    if has_tool_calls and reason is FinishReason.STOP:
        return FinishReason.TOOL_CALLS
    return reason


def parse_usage(data: Any) -> Usage | None:
    """Usage with cached and reasoning tokens where the server reports them."""
    if not isinstance(data, dict):
        return None
    try:
        prompt_details = data.get("prompt_tokens_details")
        completion_details = data.get("completion_tokens_details")
        cached = (
            (prompt_details.get("cached_tokens") if prompt_details else None)
            or data.get("prompt_cache_hit_tokens")
            or 0
        )
        prompt = data.get("prompt_tokens") or 0
        completion = data.get("completion_tokens") or 0
        reasoning = (completion_details.get("reasoning_tokens") if completion_details else None) or 0
        # Checked inline, not by a helper: every reply asks.
        if type(prompt) is int and type(completion) is int and type(cached) is int and type(reasoning) is int:
            return built.usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cached,
                               cache_write_tokens=0, reasoning_tokens=reasoning)  # fmt: skip
        counts = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cache_read_tokens": cached,
            "cache_write_tokens": 0,
            "reasoning_tokens": reasoning,
        }
        return Usage(**counts)  # a server that sends "12" or 12.0: validated (and converted) as before
    except (AttributeError, ValueError) as exc:
        raise MalformedResponseError(f"Unexpected usage object: {data!r:.200}", provider=PROVIDER) from exc


def _response_extra(data: dict[str, Any], headers: Mapping[str, str] | None) -> dict[str, JsonValue]:
    extra: dict[str, JsonValue] = {}
    for key in ("system_fingerprint", "service_tier"):
        value = data.get(key)
        if value is not None:
            extra[key] = value
    request_id = header_value(headers, b"x-request-id")
    if request_id:
        extra["request_id"] = request_id
    return extra


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    # Some compatible servers send the arguments as a JSON object instead of a string.
    return pydantic_core.to_json(value).decode()


def _tool_calls(raw: Any, choice_index: int, where: str, body: object) -> list[ToolCall]:
    if not raw:
        return []
    calls = []
    for position, item in enumerate(as_list(raw, f"{where}.tool_calls", PROVIDER, body)):
        call = as_object(item, f"{where}.tool_calls[{position}]", PROVIDER, body)
        function = as_object(call.get("function") or {}, f"{where}.tool_calls[{position}].function", PROVIDER, body)
        # A missing id (seen on some compatible servers) is left empty: the reply gives the call one of
        # its own (``chatclient.messages.CallIds``), as it does for a repeated one.
        call_id = call.get("id") or ""
        calls.append(
            ToolCall(
                id=call_id,
                type=call.get("type") or "function",
                name=function.get("name") or "",
                arguments=_arguments(function.get("arguments")),
            )
        )
    return calls


def split_content(content: Any) -> tuple[str | None, str | None]:
    """``(text, reasoning)`` of a message's ``content``: a string, ``None``, or a list of chunks.

    Mistral's reasoning models (Magistral) answer with a list: ``{"type": "text", "text"}`` chunks
    and ``{"type": "thinking", "thinking": [text chunks]}`` chunks. The text chunks are joined into
    the answer, the thinking ones into the reasoning; other chunk types are left out.
    """
    if content is None or isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise shape_error(PROVIDER, "message.content", content, "a string or a list of parts", content)
    texts: list[str] = []
    thoughts: list[str] = []
    for chunk in content:
        if isinstance(chunk, str):
            texts.append(chunk)
        elif not isinstance(chunk, dict):
            raise shape_error(PROVIDER, "a part of message.content", chunk, "a string or an object", content)
        elif chunk.get("type") == "text" and isinstance(chunk.get("text"), str):
            texts.append(chunk["text"])
        elif chunk.get("type") == "thinking":
            thinking = chunk.get("thinking")
            if isinstance(thinking, str):
                thoughts.append(thinking)
            elif isinstance(thinking, list):
                thoughts.extend(p["text"] for p in thinking if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ("".join(texts) if texts else None), ("".join(thoughts) if thoughts else None)


def _message_metadata(message: Mapping[str, Any], thinking: str | None = None) -> dict[str, JsonValue]:
    metadata: dict[str, JsonValue] = {}
    for key in _REASONING_KEYS:
        reasoning = message.get(key)
        if isinstance(reasoning, str) and reasoning:
            metadata["reasoning"] = reasoning
            metadata[REASONING_FIELD_KEY] = key
            break
    else:
        if thinking:
            metadata["reasoning"] = thinking
    refusal = message.get("refusal")
    if refusal:
        metadata["refusal"] = refusal
    annotations = message.get("annotations")
    if annotations:
        metadata["annotations"] = annotations
    return metadata


def parse_response(data: Any, headers: Mapping[str, str] | None = None) -> ChatResponse:
    """A complete (not streamed) reply. Reasoning text (``reasoning``/``reasoning_content``) and a
    refusal go to the message metadata, never into the answer text."""
    try:
        # Shapes are checked inline (``type(...) is``) and by ``as_object`` only when they are
        # wrong: its ``where`` strings would otherwise be formatted for every choice of every reply.
        reply = data if type(data) is dict else as_object(data, "the reply", PROVIDER, data)
        choices = reply.get("choices")
        if type(choices) is not list:
            choices = as_list(choices, "'choices'", PROVIDER, data)
        if not choices:  # the API always sends n >= 1 choices: an empty list is no answer, not an empty one
            raise MalformedResponseError(
                "The Chat Completions reply has no choices ('choices' is empty): there is no message to read",
                provider=PROVIDER,
                body=data,
            )
        generations = []
        for position, raw_choice in enumerate(choices):
            choice = (
                raw_choice
                if type(raw_choice) is dict
                else as_object(raw_choice, f"choices[{position}]", PROVIDER, data)
            )
            message = choice.get("message")
            if type(message) is not dict:
                message = as_object(message, f"choices[{position}].message", PROVIDER, data)
            raw_calls = message.get("tool_calls")
            index = choice.get("index", position)
            calls = _tool_calls(raw_calls, index, f"choices[{position}].message", data) if raw_calls else []
            content = message.get("content")
            thinking = None
            if content is not None and type(content) is not str:
                content, thinking = split_content(content)
            message_metadata = _message_metadata(message, thinking)
            raw_reason = choice.get("finish_reason")
            reason = finish_reason(raw_reason, bool(calls))
            if "refusal" in message_metadata:
                reason = FinishReason.CONTENT_FILTER  # the rule of every provider: see the README
            logprobs = choice.get("logprobs")
            if logprobs is None and raw_reason in _FINISH_REASONS:  # the usual reply: one metadata for all
                meta = shared_generation_metadata(reason, raw_reason)
            else:
                extra: dict[str, JsonValue] = {"raw_finish_reason": raw_reason} if raw_reason is not None else {}
                if logprobs is not None:
                    extra["logprobs"] = logprobs
                meta = built.generation_metadata(finish_reason=reason, extra=extra)
            # With tool calls, Ollama's ``content: ""`` means no text.
            text = (content or None) if calls else content
            # Checked here (split_content gives a str or None; the metadata holds parsed JSON), so
            # the models are built without validating them again (chatclient._builders).
            output = built.assistant_message(
                role="assistant", text=text, tool_calls=tuple(calls), metadata=message_metadata
            )
            generations.append(built.generation(output=output, metadata=meta))
        reply_id, model = data.get("id"), data.get("model")
        raw_usage = data.get("usage")
        usage = parse_usage(
            raw_usage if type(raw_usage) is dict else optional_object(raw_usage, "'usage'", PROVIDER, data)
        )
        response_extra = _response_extra(data, headers)
        if (reply_id is None or type(reply_id) is str) and (model is None or type(model) is str):
            metadata = built.response_metadata(id=reply_id, model=model, usage=usage, extra=response_extra)
        else:  # validated: an id or a model name that is not a string is reported as malformed
            metadata = ChatResponseMetadata(id=reply_id, model=model, usage=usage, extra=response_extra)
    except MalformedResponseError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise MalformedResponseError(
            f"Unexpected Chat Completions reply: {type(exc).__name__}: {exc}", provider=PROVIDER
        ) from exc
    return built.chat_response(generations=tuple(generations), metadata=metadata)


# ---------------------------------------------------------------------- errors


def error_details(body: Any) -> ErrorDetails | None:
    """What an error body says: OpenAI's ``{"error": {...}}``, a bare ``{"error": "..."}`` (some
    compatible servers) or vLLM's flat ``{"object": "error", "message": ...}``."""
    if not isinstance(body, dict):
        return None
    error = body.get("error", body if "message" in body else None)
    if isinstance(error, str):
        return ErrorDetails(error)
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    code = error.get("code")
    return ErrorDetails(
        str(message) if message else "Unknown error",
        error_type=_str_or_none(error.get("type")),
        code=None if code is None or isinstance(code, int) else str(code),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def stream_error(event: Mapping[str, Any]) -> ProviderError:
    """The error for an ``{"error": ...}`` event inside a 200 stream, classed like the HTTP error it
    stands for; a numeric ``code`` (vLLM) is the status."""
    raw = event.get("error")
    code = raw.get("code") if isinstance(raw, dict) else None
    status = code if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600 else None
    return error_from_event(PROVIDER, dict(event), error_details, status=status)
