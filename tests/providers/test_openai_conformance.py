"""The provider conformance suite on ``OpenAIChatModel``, with replies shaped like OpenAI's."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx2
import pytest

from chatclient import ChatModel, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
}


def _pieces(text: str, count: int) -> Iterator[str]:
    size = max(1, -(-len(text) // count))
    return (text[i : i + size] for i in range(0, len(text), size))


class OpenAIWire:
    """Chat Completions replies as OpenAI sends them (see the recorded ``openai-chat`` streams)."""

    def __init__(self) -> None:
        self.id = "chatcmpl-conformance"

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
        if tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in tool_calls
            ]
        body = {
            "id": self.id,
            "object": "chat.completion",
            "created": 1760728905,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": self._usage(usage),
            "service_tier": "default",
            "system_fingerprint": "fp_conformance",
        }
        return httpx2.Response(200, json=body, headers={"x-request-id": "req_conformance"})

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> str:
        event = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 1766084435,
            "model": "gpt-4o-mini-2024-07-18",
            "service_tier": "default",
            "system_fingerprint": "fp_conformance",
            "choices": choices,
            "usage": usage,
            "obfuscation": "abc",
        }
        return f"data: {json.dumps(event)}\n\n"

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        def choice(delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

        first = {"role": "assistant", "content": "" if text else None, "refusal": None}
        events = [self._chunk(choice(first))]
        events += [self._chunk(choice({"content": piece})) for piece in _pieces(text or "", 5)]
        for index, call in enumerate(tool_calls):
            opening = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(self._chunk(choice({"tool_calls": [opening]})))
            events += [
                self._chunk(choice({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
                for piece in _pieces(call.arguments, 4)
            ]
        events.append(self._chunk(choice({}, "tool_calls" if tool_calls else "stop")))
        events.append(self._chunk([], self._usage(usage)))
        events.append("data: [DONE]\n\n")
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream; charset=utf-8"}, content="".join(events).encode()
        )

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        error_type, code = _ERROR_TYPES.get(status, ("api_error", None))
        body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
        return httpx2.Response(
            status, headers={"x-request-id": "req_conformance", **headers}, content=json.dumps(body, indent=2).encode()
        )

    def tool_results(self, request_body: Any) -> dict[str, str]:
        return {m["tool_call_id"]: m["content"] for m in request_body["messages"] if m["role"] == "tool"}


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


class TestOpenAIConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return OpenAIWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return OpenAIChatModel(
            "gpt-4o-mini",
            api_key="sk-conformance",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return OpenAIChatModel("gpt-4o-mini", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0))
