"""Pure translation between chatclient types and Gemini's ``generateContent`` (no I/O).

The same body serves the Gemini API and Vertex AI; the model and the mode are in the URL
(``/models/<model>:generateContent``, ``:streamGenerateContent?alt=sse``), not in the body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    UserMessage,
)
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, FinishReason, Usage
from chatclient.tools.definition import ToolDefinition
from providers._arguments import arguments_object
from providers._errors import ErrorDetails, error_from_event
from providers._media import unsupported_media
from providers._per_options import PerOptions
from providers._reply_shape import optional_object
from providers._tool_rendering import TOOL_RENDERINGS

from .options import GeminiChatOptions

__all__ = [
    "PARTS_METADATA_KEY",
    "PROVIDER",
    "build_request",
    "error_details",
    "finish_reason",
    "parse_response",
    "parse_usage",
]

PROVIDER = "gemini"
PARTS_METADATA_KEY = "gemini_parts"
"""``AssistantMessage.metadata`` key holding the reply's parts as the API sent them (consecutive text
pieces joined), kept when they carry what the message's text and calls cannot: thought parts,
``thoughtSignature``\\ s, parts of other kinds. The API wants the signatures back on the very parts
they came with, so ``build_request`` sends these parts for the model turn instead of rebuilding it,
as long as they still match the message's text and calls."""

_FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "IMAGE_PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "IMAGE_RECITATION": FinishReason.CONTENT_FILTER,
}

_TOOL_MODES = {"auto": "AUTO", "any": "ANY", "required": "ANY", "none": "NONE"}


# ---------------------------------------------------------------------------------------------- request


def build_request(prompt: Prompt, options: ChatOptions | None, *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``generateContent`` / ``streamGenerateContent`` (the same for both)."""
    opts = options if options is not None else ChatOptions()
    if not opts.model:
        raise ConfigurationError("No Gemini model given: pass model= to GeminiChatModel or set options.model")
    fields = _OPTION_FIELDS.get(opts, False)
    system, contents = _contents(prompt.messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    if fields.has_tools:
        assert isinstance(opts, ToolCallingChatOptions)
        body["tools"] = [{"functionDeclarations": TOOL_RENDERINGS.render(opts.tool_callbacks, _render_tools)}]
        if fields.tool_config:
            body["toolConfig"] = fields.tool_config
    body.update(fields.rest)
    return body


class _OptionFields(NamedTuple):
    has_tools: bool
    tool_config: dict[str, Any] | None
    rest: dict[str, Any]
    """``generationConfig`` and the top-level fields after the tools."""


def _option_fields(opts: ChatOptions, _unused: object) -> _OptionFields:
    gemini = opts if isinstance(opts, GeminiChatOptions) else None
    config: dict[str, Any] = {}
    if opts.temperature is not None:
        config["temperature"] = opts.temperature
    if opts.top_p is not None:
        config["topP"] = opts.top_p
    if opts.top_k is not None:
        config["topK"] = opts.top_k
    if opts.max_tokens is not None:
        config["maxOutputTokens"] = opts.max_tokens
    if opts.stop_sequences:
        config["stopSequences"] = list(opts.stop_sequences)
    if opts.presence_penalty is not None:
        config["presencePenalty"] = opts.presence_penalty
    if opts.frequency_penalty is not None:
        config["frequencyPenalty"] = opts.frequency_penalty
    if opts.output_schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = opts.output_schema
    rest: dict[str, Any] = {}
    if gemini is not None:
        _add_gemini(config, rest, gemini)
    if config:
        rest = {"generationConfig": config, **rest}
    has_tools = isinstance(opts, ToolCallingChatOptions) and bool(opts.tool_callbacks)
    tool_config = _tool_config(opts.tool_choice) if has_tools and isinstance(opts, ToolCallingChatOptions) else None
    return _OptionFields(has_tools, tool_config, rest)


_OPTION_FIELDS = PerOptions(_option_fields)


def _add_gemini(config: dict[str, Any], rest: dict[str, Any], gemini: GeminiChatOptions) -> None:
    if gemini.seed is not None:
        config["seed"] = gemini.seed
    thinking: dict[str, Any] = {}
    if gemini.thinking_budget is not None:
        thinking["thinkingBudget"] = gemini.thinking_budget
    if gemini.thinking_level is not None:
        thinking["thinkingLevel"] = gemini.thinking_level
    if gemini.include_thoughts is not None:
        thinking["includeThoughts"] = gemini.include_thoughts
    if thinking:
        config["thinkingConfig"] = thinking
    if gemini.safety_settings:
        rest["safetySettings"] = [dict(setting) for setting in gemini.safety_settings]
    if gemini.cached_content is not None:
        rest["cachedContent"] = gemini.cached_content
    if gemini.labels:
        rest["labels"] = dict(gemini.labels)


def _tool_config(choice: str | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    mode = _TOOL_MODES.get(choice)
    if mode is not None:
        return {"functionCallingConfig": {"mode": mode}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def _render_tools(definitions: Sequence[ToolDefinition], _unused: object = None) -> list[dict[str, Any]]:
    """Function declarations with the tools' JSON Schema as it is (``parametersJsonSchema``), not
    narrowed to the OpenAPI subset that ``parameters`` takes."""
    return [{"name": d.name, "description": d.description, "parametersJsonSchema": d.input_schema} for d in definitions]


def _contents(messages: Sequence[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """System texts (hoisted into ``systemInstruction``) and the ``contents`` turns, roles ``user``
    and ``model``; consecutive parts of one role join one turn (a round's function responses and a
    user text after them)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        if isinstance(message, UserMessage):
            role, parts = "user", _user_parts(message)
        elif isinstance(message, AssistantMessage):
            role, parts = "model", _model_parts(message)
            calls = {call.id: (call.name, _wire_id(call)) for call in message.tool_calls}
        elif isinstance(message, ToolResponseMessage):
            role, parts = "user", [_function_response(r, calls.get(r.id)) for r in message.responses]
        elif isinstance(message, SystemMessage):
            system.append(message.text)
            continue
        else:  # pragma: no cover - Message is a closed union
            raise ConfigurationError(f"Unsupported message type {type(message).__name__}")
        if not parts:
            continue  # the API rejects a turn without parts
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    return system, out


def _wire_id(call: ToolCall) -> str:
    """The id the API gave the call, ``""`` when it gave none (older models give none: the call then
    has an id of our own, which is not sent)."""
    return call.wire_id if call.wire_id is not None else call.id


_TAKES = "the API takes inline (base64) data with its media type, or a file URI (gs://, the Files API, or https)"


def _user_parts(message: UserMessage) -> list[dict[str, Any]]:
    """Images and documents first (Google's guidance: a single image reads best before the text),
    then the text (dropped when empty and there is media: the API rejects an empty text part)."""
    parts: list[dict[str, Any]] = []
    for media in message.media:
        parts.append(_media_part(media))
    if message.text or not parts:
        parts.append({"text": message.text})
    return parts


def _media_part(part: ImagePart | FilePart) -> dict[str, Any]:
    if part.data is not None:
        return {"inlineData": {"mimeType": part.media_type, "data": part.data}}
    if part.url is None or part.url.startswith("data:"):
        raise unsupported_media("Gemini", part, _TAKES)
    file_data: dict[str, Any] = {"fileUri": part.url}
    if part.media_type:
        file_data["mimeType"] = part.media_type
    return {"fileData": file_data}


def _model_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    stored = message.metadata.get(PARTS_METADATA_KEY)
    if isinstance(stored, list) and _still_matches(stored, message):
        return [dict(part) for part in stored if isinstance(part, dict)]
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"text": message.text})
    for call in message.tool_calls:
        function_call: dict[str, Any] = {"name": call.name, "args": arguments_object(call.arguments)}
        wire_id = _wire_id(call)
        if wire_id:
            function_call["id"] = wire_id
        parts.append({"functionCall": function_call})
    return parts


def _still_matches(stored: list[Any], message: AssistantMessage) -> bool:
    """Whether the kept parts are still this message's (its text and calls not edited since)."""
    texts = [p["text"] for p in stored if isinstance(p, dict) and "text" in p and not p.get("thought")]
    calls = [p["functionCall"] for p in stored if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
    names = [call.get("name") for call in calls]
    return ("".join(texts) or None) == (message.text or None) and names == [c.name for c in message.tool_calls]


def _function_response(response: ToolResponse, call: tuple[str, str] | None) -> dict[str, Any]:
    """A ``functionResponse`` part: ``response`` is an object, ``{"output": …}`` (``{"error": …}`` for
    a failed tool), as Google's SDK sends a tool's result."""
    name, wire_id = call if call is not None else (response.name, response.id)
    text = "\n".join(part.as_text() for part in response.parts) if response.parts else response.response_data
    function_response: dict[str, Any] = {
        "name": name or response.name,
        "response": {"error" if response.is_error else "output": text},
    }
    if wire_id:
        function_response["id"] = wire_id
    return {"functionResponse": function_response}


# --------------------------------------------------------------------------------------------- response


def finish_reason(raw: str | None, has_calls: bool = False) -> FinishReason | None:
    """``finishReason`` in our vocabulary: ``STOP`` with function calls is ``TOOL_CALLS`` (the API says
    ``STOP`` either way); unknown reasons (``MALFORMED_FUNCTION_CALL``, new ones) are ``OTHER``."""
    if raw is None:
        return None
    reason = _FINISH_REASONS.get(raw, FinishReason.OTHER)
    return FinishReason.TOOL_CALLS if has_calls and reason is FinishReason.STOP else reason


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def parse_usage(usage: Mapping[str, Any]) -> Usage:
    """``usageMetadata``: the prompt counts the tool-use prompt too; the completion counts the
    candidates and the thoughts (``thoughtsTokenCount`` is billed as output), and the thoughts are its
    ``reasoning_tokens``; ``cachedContentTokenCount`` is a part of the prompt."""
    thoughts = _int(usage.get("thoughtsTokenCount"))
    prompt = _int(usage.get("promptTokenCount")) + _int(usage.get("toolUsePromptTokenCount"))
    completion = _int(usage.get("candidatesTokenCount")) + thoughts
    cached = _int(usage.get("cachedContentTokenCount"))
    return built.usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cached,
                       cache_write_tokens=0, reasoning_tokens=thoughts)  # fmt: skip


def join_part(parts: list[dict[str, Any]], part: dict[str, Any]) -> None:
    """Add ``part`` to ``parts``, joining an unsigned text piece to an unsigned text part of the same
    kind (thought or not) before it: a stream's pieces then make the parts a whole reply has, so call
    and stream send back the same bytes. A part with a ``thoughtSignature`` is never joined with
    another (Google's rule for signatures), so it goes back as it came."""
    if parts and set(part) <= {"text", "thought"} and isinstance(part.get("text"), str):
        last = parts[-1]
        if (
            set(last) <= {"text", "thought"}
            and isinstance(last.get("text"), str)
            and bool(last.get("thought")) == bool(part.get("thought"))
        ):
            parts[-1] = {**last, "text": last["text"] + part["text"]}
            return
    parts.append(dict(part))


def needs_keeping(parts: list[dict[str, Any]]) -> bool:
    """Whether the parts carry what the message's text and calls alone cannot give back."""
    for part in parts:
        if part.get("thought") or "thoughtSignature" in part:
            return True
        if not ("text" in part or "functionCall" in part) or len(part) != 1:
            return True
    return False


def candidate_of(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The reply's first candidate; ``None`` when there is none (a blocked prompt)."""
    candidates = data.get("candidates")
    if candidates is None:
        return None
    if not isinstance(candidates, list):
        raise MalformedResponseError("The reply's 'candidates' is not a list", provider=PROVIDER, body=data)
    if not candidates:
        return None
    first = candidates[0]
    if not isinstance(first, dict):
        raise MalformedResponseError("A candidate is not an object", provider=PROVIDER, body=data)
    return first


def parts_of(candidate: Mapping[str, Any], body: Any) -> list[dict[str, Any]]:
    content = candidate.get("content")
    if content is None:
        return []  # a candidate stopped before any part (SAFETY, MAX_TOKENS while thinking)
    if not isinstance(content, dict):
        raise MalformedResponseError("A candidate's 'content' is not an object", provider=PROVIDER, body=body)
    parts = content.get("parts") or []
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise MalformedResponseError("A candidate's 'parts' is not a list of objects", provider=PROVIDER, body=body)
    return parts


def function_call(part: Mapping[str, Any], body: Any) -> tuple[str, str, str]:
    """``(wire id or "", name, arguments as JSON)`` of a ``functionCall`` part."""
    call = part["functionCall"]
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise MalformedResponseError("A functionCall part has no string 'name'", provider=PROVIDER, body=body)
    args = optional_object(call.get("args"), "a functionCall's 'args'", PROVIDER, body) or {}
    wire_id = call.get("id")
    return (wire_id if isinstance(wire_id, str) else ""), call["name"], pydantic_core.to_json(args).decode()


def generation_extra(candidate: Mapping[str, Any] | None, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    extra: dict[str, JsonValue] = {}
    raw = candidate.get("finishReason") if candidate is not None else None
    if isinstance(raw, str):
        extra["raw_finish_reason"] = raw
    message = candidate.get("finishMessage") if candidate is not None else None
    if isinstance(message, str):
        extra["finish_message"] = message
    feedback = data.get("promptFeedback")
    if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
        extra["block_reason"] = feedback["blockReason"]
    return extra


def blocked_reason(candidate: Mapping[str, Any] | None, data: Mapping[str, Any]) -> str | None:
    """The raw finish reason, or ``promptFeedback.blockReason`` when the prompt itself was blocked."""
    raw = candidate.get("finishReason") if candidate is not None else None
    if isinstance(raw, str):
        return raw
    feedback = data.get("promptFeedback")
    if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
        return "SAFETY"  # no candidate at all: the prompt was blocked
    return None


def parse_response(data: Any, headers: Mapping[str, str] | httpx2.Headers | None = None) -> ChatResponse:
    """A complete ``GenerateContentResponse`` as a ``ChatResponse`` (its first candidate)."""
    if not isinstance(data, dict):
        raise MalformedResponseError(f"Expected a JSON object, got {type(data).__name__}", provider=PROVIDER)
    if "error" in data:
        raise stream_error(data)
    candidate = candidate_of(data)
    if candidate is None and not isinstance(data.get("promptFeedback"), dict):
        raise MalformedResponseError("The reply has no candidates and no promptFeedback", provider=PROVIDER, body=data)
    texts: list[str] = []
    calls: list[ToolCall] = []
    kept: list[dict[str, Any]] = []
    saw_text = False
    for part in parts_of(candidate, data) if candidate is not None else []:
        if "functionCall" in part:
            wire_id, name, arguments = function_call(part, data)
            calls.append(ToolCall(id=wire_id, name=name, arguments=arguments))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            saw_text = True
            texts.append(part["text"])
        join_part(kept, part)
    metadata: dict[str, JsonValue] = {PARTS_METADATA_KEY: list(kept)} if needs_keeping(kept) else {}
    text = "".join(texts) if saw_text else None
    message = built.assistant_message(role="assistant", text=text, tool_calls=tuple(calls), metadata=metadata)
    raw = blocked_reason(candidate, data)
    generation = built.generation(
        output=message,
        metadata=built.generation_metadata(
            finish_reason=finish_reason(raw, bool(calls)), extra=generation_extra(candidate, data)
        ),
    )
    usage = optional_object(data.get("usageMetadata"), "'usageMetadata'", PROVIDER, data)
    reply_id, model = data.get("responseId"), data.get("modelVersion")
    response_metadata = built.response_metadata(
        id=reply_id if isinstance(reply_id, str) else None,
        model=model if isinstance(model, str) else None,
        usage=parse_usage(usage) if usage is not None else None,
        extra={},
    )
    return built.chat_response(generations=(generation,), metadata=response_metadata)


# ----------------------------------------------------------------------------------------------- errors


def error_details(body: Any) -> ErrorDetails | None:
    """Facts from Google's ``{"error": {"code", "message", "status", "details": [...]}}`` (a streamed
    error may come as a list holding that object). ``code`` is the ``ErrorInfo`` reason
    (``API_KEY_INVALID``), the type the RPC status (``INVALID_ARGUMENT``, ``RESOURCE_EXHAUSTED``);
    a ``RetryInfo`` detail's ``retryDelay`` (``"37s"``) is the wait a 429 asks for."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if not isinstance(error, dict):
        return None
    message = error.get("message")
    status = error.get("status")
    reason: str | None = None
    delay: float | None = None
    for detail in error.get("details") or ():
        if not isinstance(detail, dict):
            continue
        if reason is None and isinstance(detail.get("reason"), str):
            reason = detail["reason"]
        if delay is None and isinstance(detail.get("retryDelay"), str):
            delay = _seconds(detail["retryDelay"])
    return ErrorDetails(
        message=message if isinstance(message, str) and message else "Gemini API error",
        error_type=status if isinstance(status, str) else None,
        code=reason,
        retry_after=delay,
    )


def _seconds(duration: str) -> float | None:
    """A protobuf ``Duration`` in JSON (``"37s"``, ``"1.5s"``) in seconds; ``None`` if it is not one."""
    try:
        return max(0.0, float(duration.removesuffix("s"))) if duration.endswith("s") else None
    except ValueError:
        return None


def stream_error(data: Mapping[str, Any]) -> ProviderError:
    """The error for an ``{"error": …}`` object inside a 200 reply, classed by its HTTP ``code``."""
    error = data.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return error_from_event(PROVIDER, data, error_details, status=code if type(code) is int else None)
