"""The provider conformance suite on Gemini's ``generateContent`` (encoded like the recorded traffic)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from chatclient import ChatModel, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.gemini import GeminiChatModel

_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _pieces(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


class GeminiWire:
    """The kit's canned replies as ``GenerateContentResponse``\\ s. Calls carry the kit's ids (newer
    models send ``functionCall.id``); the results are matched by them."""

    model = "gemini-conformance"

    def _usage(self, usage: Usage) -> dict[str, Any]:
        return {
            "promptTokenCount": usage.prompt_tokens,
            "candidatesTokenCount": usage.completion_tokens,
            "totalTokenCount": usage.total_tokens,
        }

    def _body(self, parts: list[dict[str, Any]], finish: str | None, usage: Usage) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": self._usage(usage), "modelVersion": self.model,
                "responseId": "conformance"}  # fmt: skip

    def _parts(self, text: str | None, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for call in tool_calls:
            args = json.loads(call.arguments) if call.arguments else {}
            parts.append({"functionCall": {"id": call.id, "name": call.name, "args": args}})
        return parts

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        return httpx2.Response(200, json=self._body(self._parts(text, tool_calls), "STOP", usage))

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        """Text in several chunks; each call whole in its own chunk (Gemini streams no argument pieces);
        the finish reason and the usage in the last one, as recorded."""
        bodies = [self._body([{"text": piece}], None, usage) for piece in _pieces(text or "", 3)]
        bodies += [self._body(self._parts(None, [call]), None, usage) for call in tool_calls]
        bodies.append(self._body([{"text": ""}], "STOP", usage))
        events = "".join(f"data: {json.dumps(body)}\r\n\r\n" for body in bodies)
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=events.encode())

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        body = {"error": {"code": status, "message": message, "status": _STATUSES.get(status, "UNKNOWN")}}
        return httpx2.Response(status, headers=headers, json=body)

    def tool_results(self, request_body: Any) -> dict[str, str]:
        results: dict[str, str] = {}
        for turn in request_body["contents"]:
            for part in turn["parts"]:
                if "functionResponse" in part:
                    response = part["functionResponse"]
                    results[response["id"]] = response["response"]["output"]
        return results


class TestGeminiConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return GeminiWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return GeminiChatModel(
            "gemini-conformance",
            api_key="test-key",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return GeminiChatModel(
            "gemini-conformance", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0)
        )
