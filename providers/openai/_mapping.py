"""Pure translation between chatclient types and the Chat Completions wire format (no I/O).

Shared by the sync and async paths and by the official-SDK transport. Unknown fields in replies
are ignored; a reply that does not have the expected shape raises ``MalformedResponseError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pydantic_core
from pydantic import JsonValue

from chatclient._trusted import trusted
from chatclient.errors import (
    MalformedResponseError,
    ProviderError,
    StreamIncompleteError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
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
from chatclient.tools.definition import ToolDefinition
from providers._extras import apply_extra_body
from providers._http import ErrorDetails, error_from_event
from providers._media import unsupported_media
from providers._tool_rendering import TOOL_RENDERINGS

__all__ = [
    "PROVIDER",
    "REASONING_FIELD_KEY",
    "StreamParser",
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
_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


# ---------------------------------------------------------------------- request


def build_request(
    prompt: Prompt, options: ChatOptions, *, stream: bool, openai_platform: bool = True
) -> dict[str, Any]:
    """The request body for ``prompt`` with ``options`` (already merged over the model's defaults).

    ``openai_platform`` is true for OpenAI and Azure OpenAI: ``max_tokens`` is then sent as
    ``max_completion_tokens`` and ``top_k`` is left out (both for compatibility, see the options).
    """
    body: dict[str, Any] = {"model": options.model, "messages": _messages(prompt.messages)}
    form = getattr(options, "tool_call_content", "empty")
    if form != "empty":
        _tool_call_content(body["messages"], form)
    if stream:
        body["stream"] = True
        if getattr(options, "stream_include_usage", True):
            body["stream_options"] = {"include_usage": True}
    _sampling(body, options, openai_platform)
    _tools(body, options)
    schema = options.output_schema
    if schema is not None:
        body["response_format"] = _response_format(schema, options)
    elif (response_format := getattr(options, "response_format", None)) is not None:
        body["response_format"] = response_format
    for name in ("seed", "reasoning_effort", "user", "logit_bias", "logprobs", "top_logprobs", "n"):
        if (value := getattr(options, name, None)) is not None:
            body[name] = value
    for name in ("service_tier", "store", "metadata"):
        if (value := getattr(options, name, None)) is not None:
            body[name] = value
    return apply_extra_body(body, options)


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
    for message in messages:
        if isinstance(message, AssistantMessage):
            wire.append(_assistant(message))
        elif isinstance(message, ToolResponseMessage):
            wire.extend({"role": "tool", "tool_call_id": r.id, "content": _tool_content(r)} for r in message.responses)
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
            "id": call.id,
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
        name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) and title else "output"
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
        prompt_details = data.get("prompt_tokens_details") or {}
        completion_details = data.get("completion_tokens_details") or {}
        cached = prompt_details.get("cached_tokens") or data.get("prompt_cache_hit_tokens") or 0
        counts = {
            "prompt_tokens": data.get("prompt_tokens") or 0,
            "completion_tokens": data.get("completion_tokens") or 0,
            "cache_read_tokens": cached,
            "cache_write_tokens": 0,
            "reasoning_tokens": completion_details.get("reasoning_tokens") or 0,
        }
        if all(type(count) is int for count in counts.values()):
            return trusted(Usage, counts)
        return Usage(**counts)  # a server that sends "12" or 12.0: validated (and converted) as before
    except (AttributeError, ValueError) as exc:
        raise MalformedResponseError(f"Unexpected usage object: {data!r:.200}", provider=PROVIDER) from exc


def _response_extra(data: dict[str, Any], headers: Mapping[str, str] | None) -> dict[str, JsonValue]:
    extra: dict[str, JsonValue] = {}
    for key in ("system_fingerprint", "service_tier"):
        value = data.get(key)
        if value is not None:
            extra[key] = value
    if headers is not None:
        request_id = headers.get("x-request-id")
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


def _tool_calls(raw: Any, choice_index: int) -> list[ToolCall]:
    if not raw:
        return []
    calls = []
    for position, call in enumerate(raw):
        function = call.get("function") or {}
        # Missing ids (seen on some compatible servers) are made up so results can be matched.
        call_id = call.get("id") or f"call_{choice_index}_{call.get('index', position)}"
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
        raise MalformedResponseError(f"Unexpected message content: {content!r:.200}", provider=PROVIDER)
    texts: list[str] = []
    thoughts: list[str] = []
    for chunk in content:
        if isinstance(chunk, str):
            texts.append(chunk)
        elif not isinstance(chunk, dict):
            raise MalformedResponseError(f"Unexpected content chunk: {chunk!r:.200}", provider=PROVIDER)
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
        choices = data["choices"]
        if not choices:  # the API always sends n >= 1 choices: an empty list is no answer, not an empty one
            raise MalformedResponseError(
                "The Chat Completions reply has no choices ('choices' is empty): there is no message to read",
                provider=PROVIDER,
                body=data,
            )
        generations = []
        for position, choice in enumerate(choices):
            message = choice.get("message")
            if not isinstance(message, dict):
                raise MalformedResponseError(
                    f"Choice {position} of the Chat Completions reply has no 'message' object",
                    provider=PROVIDER,
                    body=data,
                )
            index = choice.get("index", position)
            calls = _tool_calls(message.get("tool_calls"), index)
            content, thinking = split_content(message.get("content"))
            message_metadata = _message_metadata(message, thinking)
            raw_reason = choice.get("finish_reason")
            reason = finish_reason(raw_reason, bool(calls))
            if "refusal" in message_metadata:
                reason = FinishReason.CONTENT_FILTER  # the rule of every provider: see the README
            extra: dict[str, JsonValue] = {"raw_finish_reason": raw_reason} if raw_reason is not None else {}
            if choice.get("logprobs") is not None:
                extra["logprobs"] = choice["logprobs"]
            # With tool calls, Ollama's ``content: ""`` means no text.
            text = (content or None) if calls else content
            # Checked here (split_content gives a str or None; the metadata holds parsed JSON), so
            # the models are built without validating them again (chatclient._trusted).
            output = trusted(
                AssistantMessage,
                {"role": "assistant", "text": text, "tool_calls": tuple(calls), "metadata": message_metadata},
            )
            meta = trusted(GenerationMetadata, {"finish_reason": reason, "extra": extra})
            generations.append(trusted(Generation, {"output": output, "metadata": meta}))
        reply_id, model = data.get("id"), data.get("model")
        usage = parse_usage(data.get("usage"))
        response_extra = _response_extra(data, headers)
        if _str_or_missing(reply_id) and _str_or_missing(model):
            metadata = trusted(
                ChatResponseMetadata, {"id": reply_id, "model": model, "usage": usage, "extra": response_extra}
            )
        else:  # validated: an id or a model name that is not a string is reported as malformed
            metadata = ChatResponseMetadata(id=reply_id, model=model, usage=usage, extra=response_extra)
    except MalformedResponseError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise MalformedResponseError(
            f"Unexpected Chat Completions reply: {type(exc).__name__}: {exc}", provider=PROVIDER
        ) from exc
    return trusted(ChatResponse, {"generations": tuple(generations), "metadata": metadata})


def _str_or_missing(value: Any) -> bool:
    return value is None or type(value) is str


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


# ---------------------------------------------------------------------- streams


_THINKING_CHUNKS = "\0thinking"
"""Where :func:`_chunked_delta` puts the text of a delta's thinking chunks (never a wire key)."""
_DELTA_REASONING_KEYS = (*_REASONING_KEYS, _THINKING_CHUNKS)


def _chunked_delta(delta: dict[str, Any], content: list[Any]) -> dict[str, Any]:
    """A delta whose ``content`` is a list of chunks (Mistral), with its text as ``content`` and its
    thinking under :data:`_THINKING_CHUNKS`."""
    text, thinking = split_content(content)
    return {**delta, "content": text, _THINKING_CHUNKS: thinking}


class _Choice:
    """What the parser remembers about one choice of a stream."""

    __slots__ = ("calls", "finished", "last_key", "named", "reasoning", "reasoning_field", "refusal", "saw_calls")

    def __init__(self) -> None:
        self.calls: dict[Any, str] = {}
        """Fragment key (the wire's ``index``) → the call's id."""
        self.named: set[str] = set()
        """Ids of the calls whose ``ToolCallStarted`` (with a name) was sent."""
        self.last_key: Any = None
        self.reasoning: list[str] = []
        self.reasoning_field: str | None = None
        """The wire field the reasoning came in (``None`` for Mistral's thinking chunks)."""
        self.refusal: list[str] = []
        self.saw_calls = False
        self.finished = False


class StreamParser:
    """Turns decoded ``data:`` events of one stream into model events (see ``ChatModel``'s contract).

    The first event's id and model go out as a ``ChatResponse`` chunk. Text deltas go out as
    ``TextDelta`` (the hot path: no pydantic model per delta), reasoning deltas (``reasoning_content``
    / ``reasoning``) as ``ReasoningDelta``. Tool-call fragments are keyed by their ``index`` (only the
    first fragment of an index has the ``id``): the first becomes ``ToolCallStarted``, each argument
    piece a ``ToolCallDelta`` under the call's id. The reasoning and refusal text is also collected
    into the message metadata of the chunk that carries the finish reason; the usage-only event
    (``choices: []``) becomes a chunk with usage. :meth:`finish` tells a complete stream from a cut one.
    """

    __slots__ = ("_choices", "_final_meta", "_headers", "_meta")

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        self._choices: dict[int, _Choice] = {}
        self._headers = headers
        self._meta: ChatResponseMetadata | None = None
        self._final_meta: ChatResponseMetadata | None = None

    def feed(self, event: Any) -> list[ModelEvent]:
        """One event's data (the shell hands over ``(name, data)``: Chat Completions names none)."""
        if type(event) is tuple:
            event = event[1]
        if not isinstance(event, dict):
            raise MalformedResponseError(f"Unexpected stream event: {event!r:.200}", provider=PROVIDER)
        if "error" in event:
            raise stream_error(event)
        try:
            return self._feed(event)
        except MalformedResponseError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise MalformedResponseError(
                f"Unexpected stream event ({type(exc).__name__}: {exc}): {event!r:.200}", provider=PROVIDER
            ) from exc

    def finish(self, saw_done: bool = False) -> None:
        """Call when the body ended. Complete means ``[DONE]`` came, or every choice got its finish
        reason (for servers that leave ``[DONE]`` out); anything else, and a stream without a single
        event, is a cut stream: ``StreamIncompleteError``, never a (partial or empty) reply."""
        if self._meta is None:
            raise StreamIncompleteError(
                "The event stream ended without a single event (no [DONE]): the server failed after its 200",
                provider=PROVIDER,
            )
        choices = self._choices.values()
        if not saw_done and not (choices and all(choice.finished for choice in choices)):
            raise StreamIncompleteError(
                "The event stream ended before [DONE] and before a finish reason", provider=PROVIDER
            )

    def _feed(self, event: dict[str, Any]) -> list[ModelEvent]:
        events: list[ModelEvent]
        meta = self._meta
        if meta is None:
            meta = self._meta = ChatResponseMetadata(id=event.get("id"), model=event.get("model"))
            # Response-level facts ride on the closing chunks only, keeping the opening one lean.
            self._final_meta = meta.model_copy(update={"extra": _response_extra(event, self._headers)})
            events = [ChatResponse((), meta)]
        else:
            events = []
        choices = event.get("choices")
        if choices:
            for position, choice in enumerate(choices):
                self._choice(choice, position, events)
        usage_data = event.get("usage")
        if usage_data is None and isinstance(event.get("x_groq"), dict):
            usage_data = event["x_groq"].get("usage")
        usage = parse_usage(usage_data)
        if usage is not None:
            events.append(ChatResponse((), (self._final_meta or meta).model_copy(update={"usage": usage})))
        return events

    def _choice(self, choice: dict[str, Any], position: int, events: list[ModelEvent]) -> None:
        index = choice.get("index", position)
        delta = choice.get("delta") or {}
        raw_reason = choice.get("finish_reason")
        content = delta.get("content")
        if isinstance(content, list):
            delta = _chunked_delta(delta, content)
            content = delta["content"]
        text = content if isinstance(content, str) and content else None
        if text is not None and raw_reason is None and (len(delta) == 1 or (len(delta) == 2 and "role" in delta)):
            # The hot path: a text delta and nothing else (``role`` may come along).
            events.append(TextDelta(text, index))
            if index not in self._choices:
                self._choices[index] = _Choice()
            return
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = _Choice()
        for key in _DELTA_REASONING_KEYS:
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                state.reasoning.append(piece)
                if key != _THINKING_CHUNKS:
                    state.reasoning_field = key
                events.append(ReasoningDelta(piece, index))
                break
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            state.refusal.append(refusal)
        if text is not None:
            events.append(TextDelta(text, index))
        for raw in delta.get("tool_calls") or ():
            self._fragment(state, raw, index, events)
        if raw_reason is not None:
            events.append(self._finished(state, index, raw_reason))

    def _finished(self, state: _Choice, index: int, raw_reason: Any) -> ChatResponse:
        """The chunk that closes a choice: finish reason, and the reasoning and refusal it collected."""
        state.finished = True
        metadata: dict[str, JsonValue] = {}
        if state.reasoning:
            metadata["reasoning"] = "".join(state.reasoning)
            if state.reasoning_field is not None:
                metadata[REASONING_FIELD_KEY] = state.reasoning_field
        if state.refusal:
            metadata["refusal"] = "".join(state.refusal)
        reason = FinishReason.CONTENT_FILTER if state.refusal else finish_reason(raw_reason, state.saw_calls)
        extra: dict[str, JsonValue] = {"raw_finish_reason": raw_reason}
        generation = Generation(
            AssistantMessage(None, metadata=metadata), GenerationMetadata(finish_reason=reason, extra=extra)
        )
        generations = (generation,) if index == 0 else (*[Generation(AssistantMessage(None))] * index, generation)
        return ChatResponse(generations, self._final_meta)

    @staticmethod
    def _fragment(state: _Choice, raw: dict[str, Any], index: int, events: list[ModelEvent]) -> None:
        call_id = raw.get("id")
        key = raw.get("index")
        if key is None:
            key = call_id if call_id else state.last_key
        known = state.calls.get(key)
        new = False
        if call_id and known != call_id:
            # A new call (or a server that reuses an index for the next call: the id tells).
            known = state.calls[key] = call_id
            new = True
        elif known is None:
            known = state.calls[key] = f"call_{len(state.calls)}_{key}"
            new = True
        state.last_key = key
        state.saw_calls = True
        function = raw.get("function") or {}
        name = function.get("name") or ""
        if new or (name and known not in state.named):
            # Started once per call; again only if a server sent the name after the first fragment.
            events.append(ToolCallStarted(known, name, index, raw.get("type") or "function"))
            if name:
                state.named.add(known)
        arguments = _arguments(function.get("arguments"))
        if arguments:
            events.append(ToolCallDelta(known, arguments, index))
