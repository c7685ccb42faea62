"""The provider conformance suite on the Bedrock Converse wire format: replies shaped like the
recorded ones (a JSON ``Converse`` reply; a ``ConverseStream`` body framed as the AWS event stream,
with its two CRC-32s), over SigV4-signed requests; the loopback checks use a Bedrock
API key (a Bearer token) so the kit can see it sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Any

import httpx2
import pytest

from chatclient import ChatModel, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.bedrock import BedrockChatModel
from providers.bedrock._eventstream import encode_event

pytestmark = pytest.mark.skipif(find_spec("botocore") is None, reason="signing needs botocore (chatclient[bedrock])")
"""A mark, not an import-time skip: ``tests/test_secrets.py`` imports :class:`BedrockWire` from here."""

_ERROR_TYPES = {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
                404: "ResourceNotFoundException", 429: "ThrottlingException", 500: "InternalServerException",
                503: "ServiceUnavailableException"}  # fmt: skip


def frame(event: str, payload: dict[str, Any]) -> bytes:
    """One event-stream message as Bedrock frames it, its JSON padded as the API pads it."""
    return encode_event(event, json.dumps({**payload, "p": "abcdefgh"}, separators=(",", ":")).encode())


def _pieces(text: str, parts: int) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


class BedrockWire:
    """The kit's canned replies as Converse / ConverseStream replies."""

    def _usage(self, usage: Usage) -> dict[str, Any]:
        total = usage.prompt_tokens + usage.completion_tokens
        return {"inputTokens": usage.prompt_tokens, "outputTokens": usage.completion_tokens, "totalTokens": total}

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        content: list[dict[str, Any]] = [{"text": text}] if text else []
        for call in tool_calls:
            arguments = json.loads(call.arguments) if call.arguments else {}
            content.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": arguments}})
        body = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if tool_calls else "end_turn",
            "usage": self._usage(usage),
            "metrics": {"latencyMs": 300},
        }
        return httpx2.Response(200, headers={"x-amzn-requestid": "req-conformance"}, json=body)

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        frames = [frame("messageStart", {"role": "assistant"})]
        index = 0
        if text:
            for piece in _pieces(text, 3):
                frames.append(frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}}))
            frames.append(frame("contentBlockStop", {"contentBlockIndex": 0}))
            index = 1
        for call in tool_calls:
            start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
            frames.append(frame("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            for piece in _pieces(call.arguments, 4):
                delta = {"toolUse": {"input": piece}}
                frames.append(frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
            frames.append(frame("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
        frames.append(frame("messageStop", {"stopReason": "tool_use" if tool_calls else "end_turn"}))
        frames.append(frame("metadata", {"usage": self._usage(usage), "metrics": {"latencyMs": 300}}))
        headers = {"content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "req-conformance"}
        return httpx2.Response(200, headers=headers, content=b"".join(frames))

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        kind = _ERROR_TYPES.get(status, "InternalServerException")
        return httpx2.Response(status, headers={"x-amzn-errortype": kind, **headers}, json={"message": message})

    def tool_results(self, request_body: Any) -> dict[str, str]:
        results: dict[str, str] = {}
        for message in request_body["messages"]:
            for block in message["content"]:
                result = block.get("toolResult")
                if result is not None:
                    results[result["toolUseId"]] = "".join(part.get("text", "") for part in result["content"])
        return results


KEYS: dict[str, Any] = {"region": "us-east-1", "aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "s3cr3t"}


class TestBedrockConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return BedrockWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return BedrockChatModel(
            "us.amazon.nova-micro-v1:0",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
            **KEYS,
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return BedrockChatModel(
            "us.amazon.nova-micro-v1:0",
            base_url=base_url,
            api_key=api_key,
            region="us-east-1",
            retry=RetryPolicy(initial_backoff=0),
        )
