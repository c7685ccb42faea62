"""The provider conformance suite on Ollama's native wire format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from chatclient import ChatModel, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.ollama import OllamaChatModel

_CREATED = "2026-01-01T00:00:00Z"


class OllamaWire:
    """Replies as a current Ollama server writes them: calls carry ``id`` and ``function.index``,
    ``arguments`` are objects, counters come with ``done: true``. A stream sends text in small
    pieces and each tool call whole in its own line (Ollama never splits arguments)."""

    model = "llama3.2"

    def _calls(self, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        return [
            {"id": c.id, "function": {"index": i, "name": c.name, "arguments": json.loads(c.arguments or "{}")}}
            for i, c in enumerate(tool_calls)
        ]

    def _done(self, usage: Usage) -> dict[str, Any]:
        return {
            "model": self.model,
            "created_at": _CREATED,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_000_000,
            "load_duration": 10_000,
            "prompt_eval_count": usage.prompt_tokens,
            "prompt_eval_duration": 20_000,
            "eval_count": usage.completion_tokens,
            "eval_duration": 30_000,
        }

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        body = self._done(usage)
        body["message"] = {"role": "assistant", "content": text or ""}
        if tool_calls:
            body["message"]["tool_calls"] = self._calls(tool_calls)
        return httpx2.Response(200, json=body)

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        def piece(message: dict[str, Any]) -> dict[str, Any]:
            return {
                "model": self.model,
                "created_at": _CREATED,
                "message": {"role": "assistant", **message},
                "done": False,
            }

        text = text or ""
        lines = [piece({"content": text[i : i + 4]}) for i in range(0, len(text), 4)]
        lines += [piece({"content": "", "tool_calls": [call]}) for call in self._calls(tool_calls)]
        lines.append(self._done(usage))
        content = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return httpx2.Response(200, headers={"content-type": "application/x-ndjson"}, content=content)

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, json={"error": message})

    def tool_results(self, request_body: Any) -> dict[str, str]:
        return {m["tool_call_id"]: m["content"] for m in request_body["messages"] if m["role"] == "tool"}


class TestOllamaConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return OllamaWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return OllamaChatModel(
            "llama3.2",
            base_url="http://localhost:11434",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0, max_backoff=0),
        )

    def make_model_with_key(self, transport: httpx2.MockTransport, api_key: str) -> ChatModel:
        """Ollama Cloud: a local server needs no key, so the redaction check gets one this way."""
        return OllamaChatModel(
            "gpt-oss:120b",
            base_url="https://ollama.com",
            api_key=api_key,
            http_client=httpx2.Client(transport=transport),
            retry=RetryPolicy(max_retries=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return OllamaChatModel("llama3.2", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0))
