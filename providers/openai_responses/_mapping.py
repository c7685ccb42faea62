"""Pure translation between chatclient types and the OpenAI Responses API (no I/O).

Shared by the sync, async and official-SDK paths of :class:`OpenAIResponsesChatModel`.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from chatclient.errors import (
    MalformedResponseError,
    ProviderError,
    ServerError,
)
from chatclient.messages import (
    AssistantMessage,
    CallIds,
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
from providers._errors import ErrorDetails, error_from_event, header_value
from providers._media import unsupported_media
from providers._reply_shape import as_list, optional_object
from providers._tool_rendering import TOOL_RENDERINGS

__all__ = [
    "BUILTIN_ITEMS_KEY",
    "ITEM_IDS_KEY",
    "PROVIDER",
    "REASONING_KEY",
    "build_request",
    "error_details",
    "parse_response",
]

PROVIDER = "openai-responses"

REASONING_KEY = "openai_responses.reasoning"
"""``AssistantMessage.metadata`` key: the reply's ``reasoning`` items, echoed on the next request
(stateless requests need their ``encrypted_content``)."""
ITEM_IDS_KEY = "openai_responses.item_ids"
"""``AssistantMessage.metadata`` key: ``call_id`` → ``fc_…`` item id, sent back when ``store`` is on."""
BUILTIN_ITEMS_KEY = "openai_responses.builtin_items"
"""``AssistantMessage.metadata`` key: the output items of the API's built-in tools (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, and every item type this mapping does not model),
in their order, sent back as they came after the turn's reasoning items."""
_MODELLED_ITEMS = frozenset({"message", "function_call", "reasoning"})

_ENCRYPTED_REASONING = "reasoning.encrypted_content"
_REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d|gpt-5(?!(?:\.\d+)?-chat)|gpt-oss|codex)", re.IGNORECASE)
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


# ---------------------------------------------------------------------------------------------- request


def build_request(prompt: Prompt, options: ChatOptions, *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``POST /responses`` for ``prompt`` under ``options`` (already merged)."""
    store = bool(getattr(options, "store", None))
    body: dict[str, Any] = {"model": options.model, "input": input_items(prompt.messages, store=store)}
    if stream:
        body["stream"] = True
    body["store"] = store
    include = list(getattr(options, "include", None) or ())
    if not store and _ENCRYPTED_REASONING not in include and _uses_reasoning(options, prompt.messages):
        include.append(_ENCRYPTED_REASONING)
    if include:
        body["include"] = include
    _add_sampling(body, options)
    _add_tools(body, options)
    text = _text_config(options)
    if text:
        body["text"] = text
    return body


def _uses_reasoning(options: ChatOptions, messages: Sequence[Message]) -> bool:
    if getattr(options, "reasoning_effort", None) or getattr(options, "reasoning_summary", None):
        return True
    if options.model and _REASONING_MODEL.search(options.model):
        return True
    return any(isinstance(m, AssistantMessage) and m.metadata.get(REASONING_KEY) for m in messages)


def _add_sampling(body: dict[str, Any], options: ChatOptions) -> None:
    for key, value in (
        ("temperature", options.temperature),
        ("top_p", options.top_p),
        ("max_output_tokens", options.max_tokens),
        ("frequency_penalty", options.frequency_penalty),
        ("presence_penalty", options.presence_penalty),
        ("parallel_tool_calls", getattr(options, "parallel_tool_calls", None)),
        ("truncation", getattr(options, "truncation", None)),
        ("user", getattr(options, "user", None)),
        ("service_tier", getattr(options, "service_tier", None)),
    ):
        if value is not None:
            body[key] = value
    effort = getattr(options, "reasoning_effort", None)
    summary = getattr(options, "reasoning_summary", None)
    if effort is not None or summary is not None:
        reasoning: dict[str, Any] = {}
        if effort is not None:
            reasoning["effort"] = effort
        if summary is not None:
            reasoning["summary"] = summary
        body["reasoning"] = reasoning


def _add_tools(body: dict[str, Any], options: ChatOptions) -> None:
    callbacks: Sequence[ToolCallback] = getattr(options, "tool_callbacks", ())
    if callbacks:
        # Rendered once per tool set and strict mode, then reused by every call and round.
        strict = bool(getattr(options, "strict_tools", None))
        body["tools"] = TOOL_RENDERINGS.render(callbacks, _render_tools, strict)
    builtin = getattr(options, "builtin_tools", None)
    if builtin:
        body["tools"] = [*body.get("tools", ()), *builtin]
    choice: str | None = getattr(options, "tool_choice", None)
    if choice is not None:
        body["tool_choice"] = choice if choice in ("auto", "none", "required") else {"type": "function", "name": choice}


def _render_tools(definitions: Sequence[ToolDefinition], strict: bool) -> list[dict[str, Any]]:
    """The ``tools`` array. ``strict`` is always sent: the API's default for functions is strict.

    Generated schemas leave ``additionalProperties`` out; strict mode requires it to be ``false`` on
    every object, so it is added here (a schema that cannot be strict is sent as it is, for the API
    to say why)."""
    return [
        {
            "type": "function",
            "name": d.name,
            "description": d.description,
            "parameters": (_strict_schema(d.input_schema) or d.input_schema) if strict else d.input_schema,
            "strict": strict,
        }
        for d in definitions
    ]


def _text_config(options: ChatOptions) -> dict[str, Any]:
    text: dict[str, Any] = {}
    schema = options.output_schema
    if schema is not None:
        strict_schema = _strict_schema(schema)
        title = schema.get("title")
        name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) and title else "output"
        fmt: dict[str, Any] = {"type": "json_schema", "name": name, "schema": strict_schema or schema}
        description = schema.get("description")
        if isinstance(description, str):
            fmt["description"] = description
        fmt["strict"] = strict_schema is not None
        text["format"] = fmt
    verbosity = getattr(options, "verbosity", None)
    if verbosity is not None:
        text["verbosity"] = verbosity
    return text


def _strict_schema(schema: Mapping[str, JsonValue]) -> dict[str, Any] | None:
    """``schema`` with ``additionalProperties: false`` on every object, or ``None`` when it cannot be
    strict (an optional property, an open map): strict mode then guarantees the answer parses."""
    copy = _strict_node(schema)
    return copy if isinstance(copy, dict) else None


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "prefixItems")


def _strict_node(node: Any) -> Any:  # noqa: C901 (one walk over the schema keywords)
    if not isinstance(node, Mapping):
        return node
    out = dict(node)
    if node.get("type") == "object" or isinstance(node.get("properties"), Mapping):
        properties = node.get("properties") or {}
        if node.get("additionalProperties", False) is not False or "oneOf" in node:
            return None
        if not isinstance(properties, Mapping) or set(properties) != set(node.get("required") or ()):
            return None
        out["additionalProperties"] = False
    for key in _SUBSCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, Mapping):
            converted = {}
            for name, sub in value.items():
                strict = _strict_node(sub)
                if strict is None:
                    return None
                converted[name] = strict
            out[key] = converted
    for key in _SUBSCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            items = [_strict_node(sub) for sub in value]
            if any(item is None for item in items):
                return None
            out[key] = items
    if "items" in node:
        items = _strict_node(node["items"])
        if items is None:
            return None
        out["items"] = items
    return out


def input_items(messages: Sequence[Message], *, store: bool) -> list[dict[str, Any]]:
    """The ``input`` list: system messages become ``developer`` messages in place, assistant replies
    become their reasoning items, an ``output_text`` message and ``function_call`` items."""
    items: list[dict[str, Any]] = []
    call_ids: dict[str, str] = {}
    for message in messages:
        if isinstance(message, UserMessage):
            items.append({"role": "user", "content": _user_content(message) if message.media else message.text})
        elif isinstance(message, AssistantMessage):
            _assistant_items(items, message, store)
            call_ids = provider_call_ids(message)  # its results go back under the provider's ids
        elif isinstance(message, ToolResponseMessage):
            items.extend(_function_call_output(r, call_ids.get(r.id, r.id)) for r in message.responses)
        elif isinstance(message, SystemMessage):
            items.append({"role": "developer", "content": message.text})
    return items


def _function_call_output(response: ToolResponse, call_id: str) -> dict[str, Any]:
    """A ``function_call_output`` item: a text result as a string, a ``ToolResult``'s parts as a list.

    The list takes ``input_text``, ``input_image`` (a URL or a ``data:`` URL) and ``input_file``
    (``file_data`` as a ``data:`` URL with a filename, or ``file_url``); which file types the model
    reads is the API's decision (PDF is documented). JSON parts are sent as text, and an image of a
    type the API does not take (PNG, JPEG, GIF, WebP) as its text placeholder. The API has no
    error flag for a tool result, so ``is_error`` is carried by the text alone.
    """
    output: str | list[dict[str, Any]] = response.response_data
    if response.parts:
        output = [wire for part in response.parts if (wire := _output_part(part)) is not None] or ""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


_IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The inline image types the API accepts; any other is sent as its text placeholder."""


def _output_part(part: ToolResultPart) -> dict[str, Any] | None:
    if isinstance(part, (ImagePart, FilePart)) and (wire := _media_input(part)) is not None:
        return wire
    text = part.as_text()
    return {"type": "input_text", "text": text} if text else None


def _media_input(part: ImagePart | FilePart) -> dict[str, Any] | None:
    """The ``input_image`` or ``input_file`` for ``part`` (tool results and user messages take the
    same ones), or ``None`` for an inline image of a type the API does not take."""
    if isinstance(part, ImagePart):
        if part.url is not None or part.media_type in _IMAGE_MEDIA_TYPES:
            return {"type": "input_image", "image_url": part.data_url, "detail": "auto"}
        return None
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    return {"type": "input_file", "file_data": part.data_url, "filename": part.filename or _filename(part)}


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    """A user message's content: ``input_text``, then its images and files (which file types the
    model reads is the API's decision: PDF, text and office documents are documented)."""
    content: list[dict[str, Any]] = [{"type": "input_text", "text": message.text}] if message.text else []
    for part in message.media:
        # An image URL may declare its type too: one the API does not take is refused either way.
        declared = part.media_type if isinstance(part, ImagePart) else None
        wire = _media_input(part) if declared is None or declared in _IMAGE_MEDIA_TYPES else None
        if wire is None:
            raise unsupported_media("OpenAI Responses", part, "the API takes PNG, JPEG, WebP and GIF images")
        content.append(wire)
    return content


def _filename(part: FilePart) -> str:
    """A name for an unnamed inline file: the API wants one with ``file_data``, and reads its extension."""
    return "file" + (mimetypes.guess_extension(part.media_type or "") or "")


def _assistant_items(items: list[dict[str, Any]], message: AssistantMessage, store: bool) -> None:
    if not message.text and not message.tool_calls:
        return  # a reasoning item without the item that followed it is rejected
    metadata = message.metadata
    reasoning = metadata.get(REASONING_KEY)
    if isinstance(reasoning, list):
        for entry in reasoning:
            if isinstance(entry, dict):
                items.append(_reasoning_item(entry, store))
    builtin = metadata.get(BUILTIN_ITEMS_KEY)
    if isinstance(builtin, list):
        items.extend(item for item in builtin if isinstance(item, dict))
    if message.text:
        items.append({"role": "assistant", "content": [{"type": "output_text", "text": message.text}]})
    ids = metadata.get(ITEM_IDS_KEY) if store else None
    for call in message.tool_calls:
        call_item: dict[str, Any] = {
            "type": "function_call",
            "call_id": call.provider_id,
            "name": call.name,
            "arguments": call.arguments or "{}",
        }
        if isinstance(ids, dict) and isinstance(item_id := ids.get(call.id), str):
            call_item["id"] = item_id
        items.append(call_item)


def _reasoning_item(item: Mapping[str, JsonValue], store: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "reasoning"}
    if store and item.get("id"):
        out["id"] = item["id"]
    out["summary"] = item.get("summary") or []
    if item.get("content"):
        out["content"] = item["content"]
    if item.get("encrypted_content"):
        out["encrypted_content"] = item["encrypted_content"]
    return out


# ---------------------------------------------------------------------------------------------- replies


def error_details(body: Any) -> ErrorDetails | None:
    """The facts of ``{"error": {"message", "type", "param", "code"}}`` for :class:`ProviderHttp`."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, str):
        return ErrorDetails(error)
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    return ErrorDetails(
        message if isinstance(message, str) and message else "unknown error",
        error_type=_str(error.get("type")),
        code=_str(error.get("code")),
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def parse_usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    inputs = usage.get("input_tokens_details") or {}
    outputs = usage.get("output_tokens_details") or {}
    return Usage(
        prompt_tokens=_int(usage.get("input_tokens")),
        completion_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(inputs.get("cached_tokens")) if isinstance(inputs, dict) else 0,
        cache_write_tokens=_int(inputs.get("cache_write_tokens")) if isinstance(inputs, dict) else 0,
        reasoning_tokens=_int(outputs.get("reasoning_tokens")) if isinstance(outputs, dict) else 0,
    )


def _finish(status: Any, incomplete: Any, has_calls: bool) -> tuple[FinishReason, str]:
    if status == "completed":
        return (FinishReason.TOOL_CALLS if has_calls else FinishReason.STOP), "completed"
    if status == "incomplete":
        reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
        if reason == "max_output_tokens":
            return FinishReason.LENGTH, reason
        if reason == "content_filter":
            return FinishReason.CONTENT_FILTER, reason
        return FinishReason.OTHER, reason if isinstance(reason, str) else "incomplete"
    return FinishReason.OTHER, status if isinstance(status, str) else "unknown"


def event_error(error: Any, *, default: type[ProviderError] = ProviderError) -> ProviderError:
    """The error for a failed response or an ``error`` stream event, classed by its ``code``/``type``
    like the HTTP error it stands for; ``default`` when neither says what it is."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if not isinstance(error, dict):
        return default("The response failed without details", provider=PROVIDER, body=error)
    found = ErrorDetails(
        _str(error.get("message")) or "The response failed",
        error_type=_str(error.get("type")),
        code=_str(error.get("code")),
    )
    return error_from_event(PROVIDER, error, lambda _: found, unknown=default)


class _Output:
    """What the typed ``output[]`` items of one response amount to."""

    __slots__ = ("builtin", "call_ids", "calls", "item_ids", "reasoning", "refusal", "saw_message", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.saw_message = False
        self.refusal: list[str] = []
        """A refusal's text: kept out of the answer, in ``metadata["refusal"]`` (as Chat Completions)."""
        self.calls: list[ToolCall] = []
        self.call_ids = CallIds()
        """Gives each call its own id in output order (a repeated or missing ``call_id`` is replaced)."""
        self.item_ids: dict[str, JsonValue] = {}
        """A call's own id → its item's ``fc_`` id."""
        self.reasoning: list[JsonValue] = []
        self.builtin: list[JsonValue] = []

    def add(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise MalformedResponseError(f"An output item is not an object: {item!r}", provider=PROVIDER)
        kind = item.get("type")
        if kind == "message":
            self.saw_message = True
            for part in as_list(item.get("content") or [], "a message item's 'content'", PROVIDER, item):
                if isinstance(part, dict):
                    if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                        self.texts.append(part["text"])
                    elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                        self.refusal.append(part["refusal"])
        elif kind == "function_call":
            self.add_call(item)
        elif kind == "reasoning":
            self.reasoning.append(item)
        else:  # a built-in tool's item (web search, file search, code interpreter ...): kept, sent back
            self.builtin.append(item)

    def add_call(self, item: Mapping[str, Any]) -> ToolCall:
        """A ``function_call`` item's call, with its own id: a call and a stream number them alike."""
        call = function_call(item)
        own = self.call_ids.assign(call.id)
        if own != call.id:
            call = ToolCall(id=own, name=call.name, arguments=call.arguments, wire_id=call.id)
        self.calls.append(call)
        if isinstance(item_id := item.get("id"), str):
            self.item_ids[own] = item_id
        return call

    def metadata(self) -> dict[str, JsonValue]:
        metadata: dict[str, JsonValue] = {}
        if self.reasoning:
            metadata[REASONING_KEY] = self.reasoning
        if self.item_ids:
            metadata[ITEM_IDS_KEY] = self.item_ids
        if self.builtin:
            metadata[BUILTIN_ITEMS_KEY] = self.builtin
        if self.refusal:
            metadata["refusal"] = "".join(self.refusal)
        return metadata

    def text(self) -> str | None:
        """The answer: ``None`` without a message item, or when the message was only a refusal."""
        if not self.saw_message or (self.refusal and not self.texts):
            return None
        return "".join(self.texts)


def function_call(item: Mapping[str, Any]) -> ToolCall:
    """Our ``ToolCall`` of a ``function_call`` item: its id is the ``call_id``, not the ``fc_`` id
    (``""`` when a compatible server left it out: the reply gives the call an id of its own)."""
    call_id, name, arguments = item.get("call_id") or "", item.get("name"), item.get("arguments", "")
    if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
        raise MalformedResponseError(
            f"A function_call item lacks call_id, name or arguments: {item!r}", provider=PROVIDER
        )
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _generation_meta(reason: FinishReason, raw: str, refusal: bool) -> GenerationMetadata:
    """A refusal finishes with ``CONTENT_FILTER``, whatever the status said (the rule of every provider)."""
    extra: dict[str, JsonValue] = {"raw_finish_reason": raw}
    if refusal:
        extra["refusal"] = True
        reason = FinishReason.CONTENT_FILTER
    return GenerationMetadata(finish_reason=reason, extra=extra)


def _response_metadata(data: Mapping[str, Any], usage: Usage | None, request_id: str | None) -> ChatResponseMetadata:
    return ChatResponseMetadata(
        id=_str(data.get("id")),
        model=_str(data.get("model")),
        usage=usage,
        extra={"request_id": request_id} if request_id else {},
    )


_MAY_BE_EMPTY = frozenset({"incomplete", "cancelled"})
"""Statuses whose ``output`` may be empty (cut at ``max_output_tokens`` before any item, cancelled);
a ``completed`` response always has an item, and a queued or in-progress one is no reply yet."""


def parse_response(data: Any, headers: Mapping[str, str]) -> ChatResponse:
    """The ``ChatResponse`` of a (non-streamed) response object."""
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise MalformedResponseError("The reply is not a response object with an output list", provider=PROVIDER)
    status = data.get("status")
    if status == "failed":
        raise event_error(data.get("error"), default=ServerError)
    if not data["output"] and status not in _MAY_BE_EMPTY:
        raise MalformedResponseError(
            f"The response object's 'output' is empty (status {status!r}): no message, tool call or "
            "reasoning item to read",
            provider=PROVIDER,
            body=data,
        )
    usage = optional_object(data.get("usage"), "'usage'", PROVIDER, data)
    output = _Output()
    for item in data["output"]:
        output.add(item)
    reason, raw = _finish(status, data.get("incomplete_details"), bool(output.calls))
    message = AssistantMessage(output.text(), tool_calls=output.calls, metadata=output.metadata())
    return ChatResponse(
        [Generation(message, _generation_meta(reason, raw, bool(output.refusal)))],
        _response_metadata(data, parse_usage(usage), header_value(headers, b"x-request-id")),
    )
