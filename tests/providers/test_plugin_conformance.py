"""The whole conformance kit over a plugin provider that is only a mapping and a declaration
(:mod:`tests.providers.plugin_provider`): what the shell gives, a plugin gets, checked the same way."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx2

from chatclient import ChatModel, Prompt, ToolCall, Usage
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers.shell import ProviderOptions, RetryPolicy

from .plugin_provider import TinyChatModel

_KINDS = {400: "bad_request", 401: "authentication_error", 429: "rate_limit_error", 500: "server_error"}


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class TinyWire:
    """TinyChat replies: the text in pieces of five characters, each call's arguments in three."""

    def _tokens(self, usage: Usage) -> dict[str, int]:
        return {"in": usage.prompt_tokens, "out": usage.completion_tokens}

    def reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        calls = [{"ref": c.id, "tool": c.name, "args": c.arguments} for c in tool_calls]
        end = "calls" if tool_calls else "done"
        body = {"id": "t-1", "model": "tiny", "say": text, "calls": calls, "end": end, "tokens": self._tokens(usage)}
        return httpx2.Response(200, json=body)

    def stream_reply(self, text: str | None, tool_calls: Sequence[ToolCall], usage: Usage) -> httpx2.Response:
        said = text or ""
        events: list[tuple[str, dict[str, Any]]] = [("say", {"piece": said[i : i + 5]}) for i in range(0, len(said), 5)]
        for call in tool_calls:
            events.append(("call", {"ref": call.id, "tool": call.name}))
            third = max(1, len(call.arguments) // 3)
            pieces = [call.arguments[i : i + third] for i in range(0, len(call.arguments), third)]
            events.extend(("args", {"ref": call.id, "piece": piece}) for piece in pieces)
        events.append(("end", {"end": "calls" if tool_calls else "done", "tokens": self._tokens(usage)}))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_sse(events))

    def error(self, status: int, message: str, headers: dict[str, str]) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, json={"problem": {"kind": _KINDS.get(status), "text": message}})

    def tool_results(self, request_body: Any) -> dict[str, str]:
        return {turn["ref"]: turn["result"] for turn in request_body["turns"] if turn["who"] == "tool"}


class TestPluginConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return TinyWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        return TinyChatModel(
            "tiny",
            base_url="https://tiny.example",
            api_key="tiny-key",
            http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(initial_backoff=0),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return TinyChatModel("tiny", base_url=base_url, api_key=api_key, retry=RetryPolicy(initial_backoff=0))


def test_a_plugin_gets_extra_body_and_extra_headers_from_the_shell() -> None:
    """The plugin's mapping knows nothing of ``extra_body``/``extra_headers``: the shell merges the
    request's over the model's and sends them."""
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return TinyWire().reply("ok", [], Usage(prompt_tokens=1, completion_tokens=1))

    transport = httpx2.MockTransport(answer)
    defaults = ProviderOptions(extra_body={"knobs": {"a": 1}}, extra_headers={"x-route": "model"})
    client = httpx2.Client(transport=transport)
    model = TinyChatModel("tiny", base_url="https://tiny.example", api_key="k", options=defaults, http_client=client)
    request_options = ProviderOptions(extra_body={"knobs": {"b": 2}}, extra_headers={"X-Route": "request"})
    assert model.call(Prompt("hi", request_options)).text == "ok"
    body = json.loads(sent[0].content)
    assert body["knobs"] == {"a": 1, "b": 2} and body["model"] == "tiny"
    assert sent[0].headers["x-route"] == "request"
