"""The chatclient conformance suite on the OpenAI Responses provider, with replies shaped like the
recorded ones (typed ``output[]`` items; ``event:`` + ``data:`` SSE keyed by ``item_id``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from chatclient.messages import ToolCall
from chatclient.model import ChatModel
from chatclient.responses import Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.openai_responses import OpenAIResponsesChatModel

RESPONSE_ID = "resp_conformance0001"
MODEL = "gpt-4o-2024-08-06"


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _message_item(text: str, status: str = "completed") -> dict[str, Any]:
    content = (
        [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}] if status == "completed" else []
    )
    return {"id": "msg_conf0", "type": "message", "status": status, "content": content, "role": "assistant"}


def _call_item(call: ToolCall, index: int, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "id": f"fc_conf{index}",
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call.id,
        "name": call.name,
    }


def _response(status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1761175200,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "store": False,
        "usage": usage,
    }


class ResponsesWire:
    """Encodes canned replies the way ``POST /v1/responses`` does."""

    def _output(self, text: str | None, tool_calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        output = [_message_item(text)] if text is not None else []
        output += [_call_item(call, i, call.arguments) for i, call in enumerate(tool_calls)]
        return output

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        body = _response("completed", self._output(text, tool_calls), _usage(usage))
        return httpx2.Response(200, json=body, headers={"x-request-id": "req_conformance"})

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": _response("in_progress", [], None)},
            {"type": "response.in_progress", "response": _response("in_progress", [], None)},
        ]
        index = 0
        if text is not None:
            item = {"item_id": "msg_conf0", "output_index": index, "content_index": 0}
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": _message_item("", "in_progress")}
            )
            events.append({"type": "response.content_part.added", **item, "part": part})
            for piece in _pieces(text, 4):
                events.append({"type": "response.output_text.delta", **item, "delta": piece, "logprobs": []})
            events.append({"type": "response.output_text.done", **item, "text": text, "logprobs": []})
            events.append({"type": "response.content_part.done", **item, "part": {**part, "text": text}})
            events.append({"type": "response.output_item.done", "output_index": index, "item": _message_item(text)})
            index += 1
        for number, call in enumerate(tool_calls):
            item = {"item_id": f"fc_conf{number}", "output_index": index}
            added = _call_item(call, number, "", "in_progress")
            events.append({"type": "response.output_item.added", "output_index": index, "item": added})
            for piece in _pieces(call.arguments, 5):
                events.append({"type": "response.function_call_arguments.delta", **item, "delta": piece})
            events.append({"type": "response.function_call_arguments.done", **item, "arguments": call.arguments})
            done = _call_item(call, number, call.arguments)
            events.append({"type": "response.output_item.done", "output_index": index, "item": done})
            index += 1
        completed = _response("completed", self._output(text, tool_calls), _usage(usage))
        events.append({"type": "response.completed", "response": completed})
        lines = []
        for number, event in enumerate(events):
            event["sequence_number"] = number
            lines.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream; charset=utf-8"}, content="".join(lines).encode()
        )

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        kinds = {401: ("invalid_request_error", "invalid_api_key"), 429: ("requests", "rate_limit_exceeded")}
        kind, code = kinds.get(
            status, ("server_error", "server_error") if status >= 500 else ("invalid_request_error", None)
        )
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return httpx2.Response(status, json=body, headers={"x-request-id": "req_conformance_error", **headers})

    def tool_results(self, request_body: Any) -> dict[str, str]:
        return {
            item["call_id"]: item["output"]
            for item in request_body["input"]
            if item.get("type") == "function_call_output"
        }


class TestOpenAIResponsesConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return ResponsesWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return OpenAIResponsesChatModel(
            "gpt-4o",
            api_key="sk-conformance",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return OpenAIResponsesChatModel(
            "gpt-4o", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0)
        )
