"""A third-party provider as a plugin author writes it on the shell: a wire mapping and a declaration.

"TinyChat" is a made-up API (so nothing here is copied from a built-in provider): ``POST /v1/talk``
with ``{"model", "system", "turns", "tools", "answer_schema", "stream"}``; a reply
``{"id", "say", "calls", "end", "tokens"}``; a stream of SSE events ``say``, ``call``, ``args`` and
``end``; errors as ``{"problem": {"kind", "text"}}``.

Everything below is pure translation. Transport (httpx2 or an SDK client), lifecycle, retries,
deadlines, error classification, key redaction, ``extra_body``/``extra_headers`` and the options
merge come from the shell (``providers.shell``); ``tests/providers/test_plugin_conformance.py`` runs the whole
conformance kit over it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import httpx2

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from chatclient.events import ModelEvent, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import AssistantMessage, SystemMessage, ToolCall, ToolResponseMessage
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, ChatResponseMetadata, FinishReason, Generation, GenerationMetadata, Usage
from providers.shell import (
    ErrorDetails,
    ProviderModel,
    ProviderOptions,
    Secret,
    WireMapping,
    error_from_event,
)

PROVIDER = "tinychat"
_ENDS = {"done": FinishReason.STOP, "calls": FinishReason.TOOL_CALLS, "cap": FinishReason.LENGTH}

# ------------------------------------------------------------------------------------------ mapping


def build_request(prompt: Prompt, options: ChatOptions, *, stream: bool) -> dict[str, Any]:
    system = [m.text for m in prompt.messages if isinstance(m, SystemMessage) and m.text]
    turns: list[dict[str, Any]] = []
    for message in prompt.messages:
        if isinstance(message, ToolResponseMessage):
            turns.extend({"who": "tool", "ref": r.id, "result": r.response_data} for r in message.responses)
        elif isinstance(message, AssistantMessage):
            calls = [{"ref": c.id, "tool": c.name, "args": c.arguments or "{}"} for c in message.tool_calls]
            turns.append({"who": "bot", "say": message.text or "", "calls": calls})
        elif not isinstance(message, SystemMessage):
            turns.append({"who": "user", "say": message.text})
    body: dict[str, Any] = {"model": options.model, "system": "\n".join(system) or None, "turns": turns}
    callbacks = getattr(options, "tool_callbacks", ())
    if callbacks:
        definitions = [callback.definition for callback in callbacks]
        body["tools"] = [{"name": d.name, "description": d.description, "schema": d.input_schema} for d in definitions]
    if options.output_schema is not None:
        body["answer_schema"] = options.output_schema
    if stream:
        body["stream"] = True
    return body


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    return Usage(prompt_tokens=int(tokens.get("in", 0)), completion_tokens=int(tokens.get("out", 0)))


def _finished(end: Any) -> GenerationMetadata:
    return GenerationMetadata(finish_reason=_ENDS.get(end, FinishReason.OTHER))


def parse_response(data: Any, headers: Mapping[str, str] | None = None) -> ChatResponse:
    if not isinstance(data, dict) or not isinstance(data.get("calls", []), list):
        raise MalformedResponseError(f"Not a TinyChat reply: {data!r:.200}", provider=PROVIDER)
    calls = [ToolCall(id=c["ref"], name=c["tool"], arguments=c["args"]) for c in data.get("calls", [])]
    message = AssistantMessage(data.get("say"), tool_calls=calls)
    meta = ChatResponseMetadata(id=data.get("id"), model=data.get("model"), usage=_usage(data.get("tokens")))
    return ChatResponse((Generation(message, _finished(data.get("end"))),), meta)


def error_details(body: Any) -> ErrorDetails | None:
    problem = body.get("problem") if isinstance(body, dict) else None
    if not isinstance(problem, dict):
        return None
    return ErrorDetails(str(problem.get("text") or "TinyChat error"), error_type=problem.get("kind"))


class StreamParser:
    """``say`` → text deltas, ``call``/``args`` → a tool call and its argument pieces, ``end`` → the
    finish reason and usage; a stream without ``end`` was cut."""

    def __init__(self, headers: httpx2.Headers) -> None:
        self.ended = False

    def feed(self, event: tuple[str, Any]) -> Iterable[ModelEvent]:
        name, data = event
        if name == "say":
            return [TextDelta(data["piece"])]
        if name == "call":
            return [ToolCallStarted(data["ref"], data["tool"])]
        if name == "args":
            return [ToolCallDelta(data["ref"], data["piece"])]
        if name == "end":
            self.ended = True
            message = AssistantMessage(None)
            meta = ChatResponseMetadata(usage=_usage(data.get("tokens")))
            return [ChatResponse((Generation(message, _finished(data.get("end"))),), meta)]
        if name == "problem":
            raise error_from_event(PROVIDER, {"problem": data}, error_details)
        return []

    def finish(self, saw_done: bool = False) -> None:
        if not self.ended:
            raise StreamIncompleteError("The TinyChat stream ended before its 'end' event", provider=PROVIDER)


# -------------------------------------------------------------------------------------- declaration

WIRE = WireMapping(PROVIDER, "/v1/talk", build_request, parse_response, error_details, StreamParser)


class TinyChatModel(ProviderModel[ProviderOptions]):
    wire = WIRE

    def __init__(
        self, model: str, *, base_url: str, api_key: str, options: ProviderOptions | None = None, **transport: Any
    ):
        defaults = (options or ProviderOptions()).model_copy(update={"model": model})
        key = {"authorization": Secret(f"Bearer {api_key}")}
        super().__init__(defaults=defaults, base_url=base_url, secret_headers=key, **transport)
