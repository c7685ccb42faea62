"""A real provider under the observer: a retried call (429 then 200) as one ``chat`` span with the
retry as an event, in the four modes; and an API key given to the provider appears in no span, no
event, no status, no log record and no error, with content capture on."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import AuthenticationError
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel

from .conftest import Otel

LOOP = {"chatclient.advisor.name": "ToolCallingAdvisor", "chatclient.advisor.order": -2147483348}
API_KEY = "sk-test-DO-NOT-LEAK-8d3f0b"

REPLY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}


def _sse() -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "po"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "ng"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": REPLY["usage"]},
    ]
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": REPLY["model"]}
    lines = [f"data: {json.dumps({**base, **chunk})}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


class Server:
    """Answers 429 (``Retry-After: 0``) to the first ``failures`` requests, then the reply."""

    def __init__(self, failures: int = 1, status: int = 429) -> None:
        self.failures, self.status = failures, status
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
            if self.status == 401:
                error = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            return httpx2.Response(self.status, json=error, headers={"retry-after": "0"})
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, content=_sse(), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=REPLY)


def _model(server: Server) -> OpenAIChatModel:
    transport = httpx2.MockTransport(server)
    return OpenAIChatModel(
        "gpt-4o-mini",
        api_key=API_KEY,
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=RetryPolicy(initial_backoff=0),
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_retried_call_is_one_chat_span_with_the_retry_as_an_event(otel: Otel, mode: str) -> None:
    server = Server(failures=1)
    client = ChatClient.builder(_model(server)).observers(otel.observer()).build()
    response, _ = run_spec(mode, client.prompt("ping"))
    assert response.text == "pong" and len(server.requests) == 2
    streaming = mode in ("stream", "astream")
    reply = {
        "gen_ai.response.id": "<set>",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 9,
        "gen_ai.usage.output_tokens": 2,
    }
    chat_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "server.address": "127.0.0.1",
        "server.port": 9,
        "openai.api.type": "chat_completions",
    }
    if streaming:
        chat_attrs.update({"gen_ai.request.stream": True, "gen_ai.response.time_to_first_chunk": "<set>"})
    chat_attrs.update({**reply, "chatclient.request.attempts": 2})
    retry = (
        "chatclient.request.retry",
        {
            "chatclient.retry.attempt": 1,
            "error.type": "chatclient.errors.RateLimitError",
            "chatclient.retry.wait": "<set>",
        },
    )
    assert otel.tree() == [
        {
            "name": "invoke_agent",
            "kind": "INTERNAL",
            "attributes": {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.request.model": "gpt-4o-mini",
                "chatclient.stream": streaming,
                **reply,
            },
            "children": [
                {
                    "name": "advisor ToolCallingAdvisor",
                    "kind": "INTERNAL",
                    "attributes": LOOP,
                    "children": [
                        {"name": "chat gpt-4o-mini", "kind": "CLIENT", "attributes": chat_attrs, "events": [retry]}
                    ],
                }
            ],
        }
    ]


def _everything_exported(otel: Otel) -> str:
    parts: list[str] = []
    for span in otel.spans():
        parts.append(span.to_json())
        parts.extend(str(dict(event.attributes or {})) for event in span.events)
    data = otel.reader.get_metrics_data()
    parts.append(data.to_json() if data is not None else "")
    return "\n".join(parts)


@pytest.mark.parametrize("mode", MODES)
def test_an_api_key_appears_in_no_span_log_or_error(otel: Otel, mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="chatclient")
    ok = ChatClient.builder(_model(Server(failures=1))).observers(otel.observer(capture_content=True)).build()
    run_spec(mode, ok.prompt("ping"))
    denied = ChatClient.builder(_model(Server(failures=1, status=401)))
    with pytest.raises(AuthenticationError) as raised:
        run_spec(mode, denied.observers(otel.observer(capture_content=True)).build().prompt("ping"))
    exported = _everything_exported(otel)
    assert "gen_ai.input.messages" in exported and "Incorrect API key" in exported  # content was on
    assert API_KEY not in exported
    assert API_KEY not in caplog.text and "retry 1" in caplog.text
    assert API_KEY not in str(raised.value) and API_KEY not in repr(raised.value)
