"""Messages, replies and tool definitions as the GenAI conventions' JSON (only when content is captured).

Shapes: ``gen_ai.input.messages`` is ``[{role, parts}]``, ``gen_ai.output.messages`` adds a
``finish_reason``; parts are ``text``, ``tool_call``, ``tool_call_response``, ``uri``/``blob``.
Media bytes are never copied (a ``blob`` part names its type only): a trace is no file store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage, ToolResult, UserMessage
from ..responses import ChatResponse, FinishReason

_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_call",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.AWAITING_DECISION: "tool_call",
    FinishReason.RETURN_DIRECT: "stop",
}


def to_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def arguments(raw: str) -> Any:
    """Tool arguments as an object when they parse (the conventions want objects), else the text."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def input_messages(messages: Sequence[Message]) -> str:
    return to_json([_message(m) for m in messages])


def output_messages(response: ChatResponse) -> str:
    out = []
    for generation in response.generations:
        message = _message(generation.output)
        reason = generation.metadata.finish_reason
        message["finish_reason"] = _FINISH.get(reason, reason.value) if reason is not None else "stop"
        out.append(message)
    return to_json(out)


def finish_reasons(response: ChatResponse) -> tuple[str, ...]:
    return tuple(
        _FINISH.get(g.metadata.finish_reason, g.metadata.finish_reason.value)
        for g in response.generations
        if g.metadata.finish_reason is not None
    )


def tool_definitions(callbacks: Sequence[Any]) -> str:
    return to_json([{"type": "function", "name": c.definition.name} for c in callbacks])


def tool_result(result: str | ToolResult | None) -> str:
    if result is None or isinstance(result, str):
        return to_json(result)
    return to_json(result.model_dump(mode="json", exclude_defaults=True))


def _message(message: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]]
    if isinstance(message, ToolResponseMessage):
        parts = [{"type": "tool_call_response", "id": r.id, "response": r.response_data} for r in message.responses]
        return {"role": "tool", "parts": parts}
    if isinstance(message, AssistantMessage):
        parts = [{"type": "text", "content": message.text}] if message.text else []
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments(c.arguments)}
            for c in message.tool_calls
        )
        return {"role": "assistant", "parts": parts}
    if isinstance(message, UserMessage):
        parts = [{"type": "text", "content": message.text}]
        for media in message.media:
            modality = "image" if media.type == "image" else "document"
            if media.url:
                parts.append({"type": "uri", "modality": modality, "mime_type": media.media_type, "uri": media.url})
            else:
                parts.append({"type": "blob", "modality": modality, "mime_type": media.media_type})
        return {"role": "user", "parts": parts}
    if isinstance(message, SystemMessage):
        return {"role": "system", "parts": [{"type": "text", "content": message.text}]}
    return {"role": str(getattr(message, "role", "unknown")), "parts": []}
