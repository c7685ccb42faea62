"""Pure translation between chatclient's types and Ollama's native ``/api/chat`` JSON (no I/O).

Wire facts this module relies on (see the recorded traffic in ``shared/fixtures/provider-traffic/ollama``):

- ``stream`` defaults to true on the server, so the request always says which one it wants;
- tool-call ``arguments`` are JSON *objects* both ways; older servers send no call ``id``;
- ``done_reason`` is ``"stop"`` even after tool calls; the counters come with ``done: true`` only;
- errors are flat ``{"error": "..."}``, also as a line inside a 200 NDJSON stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic_core
from pydantic import JsonValue

from chatclient.errors import (
    ConfigurationError,
    MalformedResponseError,
    ProviderError,
)
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
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
    Generation,
    GenerationMetadata,
    Usage,
)
from chatclient.tools.callback import ToolCallback
from chatclient.tools.definition import ToolDefinition
from providers._tool_rendering import TOOL_RENDERINGS

from .._errors import ErrorDetails, error_from_event
from .._media import unsupported_media

__all__ = [
    "PROVIDER",
    "build_request",
    "error_details",
    "parse_response",
    "stream_error",
]

PROVIDER = "ollama"

_METRICS = ("created_at", "total_duration", "load_duration", "prompt_eval_duration", "eval_duration")
"""Top-level reply fields kept in ``ChatResponseMetadata.extra`` (durations are nanoseconds)."""
_REMOTE = ("remote_model", "remote_host")
"""Set when a local server forwarded the request to Ollama Cloud."""

# ---------------------------------------------------------------------------------------- request


def build_request(prompt: Prompt, options: ChatOptions | None, *, stream: bool) -> dict[str, Any]:
    """The ``/api/chat`` body for ``prompt`` under ``options`` (already merged over the model's defaults).

    ``options`` may be any ``ChatOptions``: Ollama-only fields are read when present.
    """
    opts = options if options is not None else ChatOptions()
    if not opts.model:
        raise ConfigurationError("No Ollama model given: pass model= to OllamaChatModel or set it in the options")
    body: dict[str, Any] = {"model": opts.model, "messages": _messages(prompt.messages), "stream": stream}
    tools = _tools(opts)
    if tools:
        body["tools"] = tools
    model_options = _model_options(opts)
    if model_options:
        body["options"] = model_options
    fmt = opts.output_schema if opts.output_schema is not None else getattr(opts, "format", None)
    if fmt is not None:
        body["format"] = fmt
    keep_alive = getattr(opts, "keep_alive", None)
    if keep_alive is not None:
        body["keep_alive"] = keep_alive
    think = getattr(opts, "think", None)
    if think is not None:
        body["think"] = think
    return body


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    for message in messages:
        if isinstance(message, UserMessage) and message.media:
            out.append(_user(message))
        elif isinstance(message, (UserMessage, SystemMessage)):
            out.append({"role": message.role, "content": message.text})
        elif isinstance(message, AssistantMessage):
            out.append(_assistant(message))
            call_ids = provider_call_ids(message)  # its results go back under the provider's ids
        else:
            out.extend(_tool_results(message, call_ids))
    return out


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or ""}
    thinking = message.metadata.get("thinking")
    if isinstance(thinking, str) and thinking:
        # Echoed back so thinking models (gpt-oss, qwen3) see their own reasoning before a tool result.
        entry["thinking"] = thinking
    if message.tool_calls:
        entry["tool_calls"] = [
            {"id": call.provider_id, "function": {"name": call.name, "arguments": _arguments_object(call.arguments)}}
            for call in message.tool_calls
        ]
    return entry


def _tool_results(message: ToolResponseMessage, call_ids: dict[str, str]) -> Iterable[dict[str, Any]]:
    # The 2024 recording sends only role + content; servers since 2025 also read tool_name (which
    # tool answered) and tool_call_id (which call). Older servers ignore unknown fields.
    return (_tool_result(response, call_ids.get(response.id, response.id)) for response in message.responses)


_INLINE_IMAGES = frozenset({"image/png", "image/jpeg"})
"""Inline image types every Ollama server decodes; other types would fail the request."""
_LEFT_OUT_NOTE = (
    "[Note: images or files the tool returned are shown above by placeholder only: "
    "this API takes inline PNG and JPEG images only, so you cannot see their content.]"
)


def _tool_result(response: ToolResponse, call_id: str) -> dict[str, Any]:
    """A ``tool`` message; a ``ToolResult``'s inline images go in its ``images`` field.

    Ollama takes images as base64 strings on any message (a vision model sees them), not URLs and
    not files: an image URL, another image type and a file are left in ``content`` as their text
    placeholders, with a note that the model cannot see them.
    """
    entry: dict[str, Any] = {"role": "tool", "content": response.response_data}
    inline = [part for part in response.parts if isinstance(part, ImagePart) and _inline_image(part)]
    if inline:
        entry["content"] = "\n".join(part.as_text() for part in response.parts if part not in inline)
        entry["images"] = [part.data for part in inline]
    left_out = sum(isinstance(part, (ImagePart, FilePart)) for part in response.parts) - len(inline)
    if left_out:
        entry["content"] += "\n" + _LEFT_OUT_NOTE
    entry["tool_name"] = response.name
    entry["tool_call_id"] = call_id
    return entry


def _inline_image(part: ImagePart) -> bool:
    """Whether the API takes ``part`` in a message's ``images`` (tool results and user messages alike)."""
    return part.data is not None and part.media_type in _INLINE_IMAGES


def _user(message: UserMessage) -> dict[str, Any]:
    """A user message with its images as base64 strings in ``images``. Nothing else can go: the API
    takes no image URLs (fetching them is the application's call) and no documents."""
    images: list[str] = []
    for part in message.media:
        if not (isinstance(part, ImagePart) and _inline_image(part)):
            raise unsupported_media("Ollama", part, "its /api/chat takes base64 PNG and JPEG images only")
        assert part.data is not None  # _inline_image checked it
        images.append(part.data)
    return {"role": "user", "content": message.text, "images": images}


def _arguments_object(arguments: str) -> Any:
    """Ollama wants the arguments as an object: empty or non-object JSON (a model's malformed
    output, already reported to it by the tool loop) is sent as ``{}``."""
    if not arguments.strip():
        return {}
    try:
        parsed = pydantic_core.from_json(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tools(opts: ChatOptions) -> list[dict[str, Any]]:
    callbacks: Sequence[ToolCallback] = getattr(opts, "tool_callbacks", ())
    if not callbacks:
        return []
    # /api/chat has no tool_choice: "none" is honoured by not offering tools, a tool name by
    # offering only that tool; "auto" and "required" offer all of them.
    choice: str | None = getattr(opts, "tool_choice", None)
    if choice == "none":
        return []
    if choice not in (None, "auto", "required"):
        callbacks = [callback for callback in callbacks if callback.name == choice]
        if not callbacks:
            raise ConfigurationError(f"tool_choice names {choice!r}, which is not a tool of this request")
    # Rendered once per tool set (after the tool_choice filter), then reused by every call and round.
    return TOOL_RENDERINGS.render(callbacks, _render_tools)


def _render_tools(definitions: Sequence[ToolDefinition], _: object) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": d.name, "description": d.description, "parameters": d.input_schema},
        }
        for d in definitions
    ]


def _model_options(opts: ChatOptions) -> dict[str, Any]:
    """Ollama's ``options`` object: the free-form dict, then the common fields, then the typed ones."""
    extra: Mapping[str, JsonValue] | None = getattr(opts, "options", None)
    result: dict[str, Any] = dict(extra) if extra else {}
    common = (
        ("temperature", opts.temperature),
        ("top_p", opts.top_p),
        ("top_k", opts.top_k),
        ("num_predict", opts.max_tokens),
        ("frequency_penalty", opts.frequency_penalty),
        ("presence_penalty", opts.presence_penalty),
    )
    for key, value in common:
        if value is not None:
            result[key] = value
    if opts.stop_sequences is not None:
        result["stop"] = list(opts.stop_sequences)
    for key in ("seed", "num_ctx", "repeat_penalty", "num_predict"):
        value = getattr(opts, key, None)
        if value is not None:
            result[key] = value
    return result


# ---------------------------------------------------------------------------------------- replies


def parse_response(data: Any, headers: Mapping[str, str] | None = None) -> ChatResponse:
    """A complete (``stream: false``) reply. ``headers`` are accepted for symmetry; Ollama sends no
    request id or rate-limit headers worth keeping."""
    if not isinstance(data, dict):
        raise MalformedResponseError(f"Expected a JSON object, got {type(data).__name__}", provider=PROVIDER)
    if "error" in data:
        raise stream_error(data)
    message = data.get("message")
    if not isinstance(message, dict):
        raise MalformedResponseError("The reply has no message object", provider=PROVIDER, body=data)
    if data.get("done") is False:  # ``stream: false`` is answered with one final object, ``done: true``
        raise MalformedResponseError(
            "The reply says 'done': false: a partial reply, not a finished message", provider=PROVIDER, body=data
        )
    content = _str_field(message, "content")
    calls = _tool_calls(message.get("tool_calls"))
    text = content if content else (None if calls else "")
    output = AssistantMessage(text, tool_calls=calls, metadata=_thinking_metadata(_str_field(message, "thinking")))
    generation_meta = _generation_metadata(data.get("done_reason"), bool(calls)) if data.get("done", True) else None
    return ChatResponse((Generation(output, generation_meta),), _response_metadata(data))


def _str_field(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedResponseError(f"message.{key} is not a string", provider=PROVIDER, body=obj)
    return value


def _thinking_metadata(thinking: str) -> dict[str, JsonValue] | None:
    """Thinking is not answer text: it is kept in the message metadata under ``"thinking"``."""
    return {"thinking": thinking} if thinking else None


def _tool_calls(raw: Any) -> list[ToolCall]:
    """Tool calls of one line; a call without an ``id`` (Ollama sent none before 2025) has ``""``: the
    reply gives it ``call_<n>``, n counting the reply's calls from 1 (``chatclient.messages.CallIds``)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise MalformedResponseError("message.tool_calls is not a list", provider=PROVIDER, body=raw)
    calls: list[ToolCall] = []
    for item in raw:
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise MalformedResponseError("A tool call has no function name", provider=PROVIDER, body=item)
        assert isinstance(function, dict)
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            raw_arguments = arguments
        elif arguments is None:
            raw_arguments = "{}"
        else:
            raw_arguments = pydantic_core.to_json(arguments).decode()
        call_id = item.get("id")
        calls.append(ToolCall(id=call_id if isinstance(call_id, str) else "", name=name, arguments=raw_arguments))
    return calls


def _generation_metadata(done_reason: Any, has_tool_calls: bool) -> GenerationMetadata:
    # "stop" also ends a reply with tool calls; an old server may send no done_reason at all.
    if done_reason is None or done_reason == "stop":
        reason = FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP
    elif done_reason == "length":
        reason = FinishReason.LENGTH
    else:
        reason = FinishReason.OTHER
    extra: dict[str, JsonValue] = {"raw_finish_reason": done_reason} if isinstance(done_reason, str) else {}
    return GenerationMetadata(finish_reason=reason, extra=extra)


def _count(data: dict[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedResponseError(f"{key} is not an integer", provider=PROVIDER, body=data)
    return value


def _response_metadata(data: dict[str, Any]) -> ChatResponseMetadata:
    usage = None
    if "prompt_eval_count" in data or "eval_count" in data:
        usage = Usage(prompt_tokens=_count(data, "prompt_eval_count"), completion_tokens=_count(data, "eval_count"))
    extra: dict[str, JsonValue] = {key: data[key] for key in (*_METRICS, *_REMOTE) if key in data}
    model = data.get("model")
    return ChatResponseMetadata(model=model if isinstance(model, str) else None, usage=usage, extra=extra)


# ---------------------------------------------------------------------------------------- errors


def error_details(body: Any) -> ErrorDetails | None:
    """Ollama's flat ``{"error": "..."}``; the OpenAI-style envelope of some proxies is read too."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, str):
        return ErrorDetails(error)
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind, code = error.get("type"), error.get("code")
        return ErrorDetails(
            error["message"],
            error_type=kind if isinstance(kind, str) else None,
            code=code if isinstance(code, str) else None,
        )
    return None


def stream_error(event: dict[str, Any]) -> ProviderError:
    """The error for an ``{"error": ...}`` object inside a 200 reply (typically a stream line).

    The server adds a ``status`` only to errors it could still send as the HTTP status; without one
    the model runner failed mid-reply, which is a server error.
    """
    status = event.get("status")
    given = status if isinstance(status, int) and not isinstance(status, bool) and status >= 400 else None
    return error_from_event(PROVIDER, event, error_details, status=given)
