"""The provider conformance suite on the Anthropic wire format (encoded like the recorded traffic)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from chatclient import ChatModel, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _pieces(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _event(name: str, data: dict[str, Any], padding: int = 0) -> str:
    """One SSE event; ``padding`` spaces before the closing brace, as the API pads its JSON."""
    encoded = json.dumps(data, separators=(",", ":"))
    if padding:
        encoded = encoded[:-1] + " " * padding + "}"
    return f"event: {name}\ndata: {encoded}\n\n"


class AnthropicWire:
    """The kit's canned replies as Messages API replies."""

    model = "claude-conformance"

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "input_tokens": usage.prompt_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": usage.completion_tokens,
        }

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        for call in tool_calls:
            arguments = json.loads(call.arguments) if call.arguments else {}
            content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
        body = {
            "id": "msg_conformance",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": "tool_use" if tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": self._usage(usage),
        }
        return httpx2.Response(200, headers={"request-id": "req_conformance"}, json=body)

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        start_usage = {**self._usage(usage), "output_tokens": 1}
        message = {"id": "msg_conformance", "type": "message", "role": "assistant", "model": self.model}
        events = [
            _event(
                "message_start",
                {"type": "message_start", "message": {**message, "content": [], "usage": start_usage}},
                7,
            )
        ]
        index = 0
        if text:
            events.append(
                _event(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                )
            )
            events.append(_event("ping", {"type": "ping"}))
            for piece in _pieces(text, 3):
                delta = {"type": "text_delta", "text": piece}
                events.append(
                    _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}, 3)
                )
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}, 5))
            index = 1
        for call in tool_calls:
            block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            events.append(
                _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
            )
            for piece in ["", *_pieces(call.arguments, 4)]:
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(
                    _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}, 2)
                )
            events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        stop = {"stop_reason": "tool_use" if tool_calls else "end_turn", "stop_sequence": None}
        events.append(_event("message_delta", {"type": "message_delta", "delta": stop, "usage": self._usage(usage)}, 4))
        events.append(_event("message_stop", {"type": "message_stop"}, 9))
        headers = {"content-type": "text/event-stream; charset=utf-8", "request-id": "req_conformance"}
        return httpx2.Response(200, headers=headers, content="".join(events).encode())

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        body = {
            "type": "error",
            "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
            "request_id": "req_conformance_error",
        }
        return httpx2.Response(status, headers=headers, json=body)

    def tool_results(self, request_body: Any) -> dict[str, str]:
        results: dict[str, str] = {}
        for message in request_body["messages"]:
            if message["role"] != "user" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block["type"] == "tool_result":
                    results[block["tool_use_id"]] = block.get("content", "")
        return results


class TestAnthropicConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return AnthropicWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return AnthropicChatModel(
            "claude-conformance",
            api_key="test-key",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return AnthropicChatModel(
            "claude-conformance", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0)
        )
