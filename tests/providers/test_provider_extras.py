"""``extra_body`` and ``extra_headers`` on every provider, per model and per request, and the
Responses API's built-in tools: requested, their output items kept and sent back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, Prompt
from chatclient.errors import BadRequestError
from chatclient.messages import UserMessage
from providers._extras import ProviderOptions
from providers.anthropic import AnthropicChatModel, AnthropicChatOptions
from providers.ollama import OllamaChatModel, OllamaChatOptions
from providers.openai import OpenAIChatModel, OpenAIChatOptions
from providers.openai_responses import OpenAIResponsesChatModel, OpenAIResponsesChatOptions
from tests.providers.model_events import assemble
from tests.providers.test_real_world_replies import Wire, sse

MODEL_EXTRAS: dict[str, Any] = {
    "extra_body": {"nested": {"kept": 1, "replaced": "model"}, "model_only": True, "listed": [1, 2]},
    "extra_headers": {"X-Team": "model", "x-model-only": "1"},
}
REQUEST_EXTRAS: dict[str, Any] = {
    "extra_body": {"nested": {"replaced": "request"}, "request_only": True, "listed": [3]},
    "extra_headers": {"x-team": "request"},
}


class Recorder:
    """Keeps each request and answers 400, so any provider's call and stream stop right after sending."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(400, json={"error": {"message": "recorded", "type": "invalid_request_error"}})

    def clients(self) -> dict[str, Any]:
        transport = httpx2.MockTransport(self.handle)
        return {
            "http_client": httpx2.Client(transport=transport),
            "async_http_client": httpx2.AsyncClient(transport=transport),
        }


PROVIDERS: dict[str, tuple[Callable[..., Any], type[ProviderOptions]]] = {
    "openai": (lambda **kw: OpenAIChatModel("m", api_key="k", **kw), OpenAIChatOptions),
    "responses": (lambda **kw: OpenAIResponsesChatModel("m", api_key="k", **kw), OpenAIResponsesChatOptions),
    "anthropic": (lambda **kw: AnthropicChatModel("m", api_key="k", **kw), AnthropicChatOptions),
    "ollama": (lambda **kw: OllamaChatModel("m", **kw), OllamaChatOptions),
}


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("name", list(PROVIDERS))
def test_request_extras_merge_over_the_model_extras_on_every_provider(name: str, stream: bool) -> None:
    make, options = PROVIDERS[name]
    recorder = Recorder()
    model = make(options=options(**MODEL_EXTRAS), **recorder.clients())
    prompt = Prompt([UserMessage("hi")], options(**REQUEST_EXTRAS))
    with pytest.raises(BadRequestError):
        list(model.stream(prompt)) if stream else model.call(prompt)
    request = recorder.requests[0]
    body = json.loads(request.content)
    assert body["nested"] == {"kept": 1, "replaced": "request"}, "objects deep-merge, the request winning"
    assert body["listed"] == [3], "any other value is replaced whole"
    assert body["model_only"] is True and body["request_only"] is True
    assert body["model"] == "m", "the typed body is still there"
    assert request.headers["x-team"] == "request" and request.headers["x-model-only"] == "1"


def test_extra_body_merges_into_a_typed_object_and_replaces_a_typed_value() -> None:
    recorder = Recorder()
    model = AnthropicChatModel("m", api_key="k", **recorder.clients())
    options = AnthropicChatOptions(
        thinking_budget=2048, temperature=1.0, extra_body={"thinking": {"display": "summarized"}, "temperature": 0.5}
    )
    with pytest.raises(BadRequestError):
        model.call(Prompt("hi", options))
    body = json.loads(recorder.requests[0].content)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
    assert body["temperature"] == 0.5


def test_the_client_merges_request_extras_over_its_default_extras() -> None:
    recorder = Recorder()
    model = OpenAIChatModel("m", api_key="k", **recorder.clients())
    client = ChatClient.builder(model).default_options(OpenAIChatOptions(**MODEL_EXTRAS)).build()
    with pytest.raises(BadRequestError):
        client.prompt().user("hi").options(OpenAIChatOptions(**REQUEST_EXTRAS)).call().content()
    request = recorder.requests[0]
    assert json.loads(request.content)["nested"] == {"kept": 1, "replaced": "request"}
    assert request.headers["x-team"] == "request" and request.headers["x-model-only"] == "1"


def test_extra_headers_go_through_an_official_sdk_client_too() -> None:
    openai = pytest.importorskip("openai")
    recorder = Recorder()
    sdk = openai.OpenAI(
        api_key="k", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(recorder.handle))
    )
    for model in (OpenAIChatModel("m", client=sdk), OpenAIResponsesChatModel("m", client=sdk)):
        with pytest.raises(BadRequestError):
            model.call(Prompt("hi", OpenAIChatOptions(extra_headers={"x-team": "sdk"})))
    assert [r.headers["x-team"] for r in recorder.requests] == ["sdk", "sdk"]


def test_credential_extra_headers_are_masked_in_a_repr() -> None:
    recorder = Recorder()
    model = OpenAIChatModel("m", api_key="k", **recorder.clients())
    with pytest.raises(BadRequestError):
        model.call(Prompt("hi", OpenAIChatOptions(extra_headers={"x-api-key": "sk-secret-extra"})))
    assert "sk-secret-extra" not in repr(recorder.requests[0].headers)


# ------------------------------------------------------------------ Responses built-in tools

WEB_SEARCH_CALL = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "weather paris"},
}
CODE_CALL = {
    "type": "code_interpreter_call",
    "id": "ci_1",
    "status": "completed",
    "code": "print(2+2)",
    "container_id": "cntr_1",
    "outputs": None,
}
ANSWER_ITEM = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Sunny, and 4.", "annotations": []}],
}
RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "model": "gpt-5",
    "status": "completed",
    "output": [WEB_SEARCH_CALL, CODE_CALL, ANSWER_ITEM],
}


def _streamed_response() -> bytes:
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": {**RESPONSE, "output": []}}),
    ]
    for index, item in enumerate(RESPONSE["output"][:2]):
        events.append(
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item})
        )
        progress = f"response.{item['type']}.in_progress"
        events.append((progress, {"type": progress, "output_index": index, "item_id": item["id"]}))
        events.append(
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item})
        )
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 2, "delta": "Sunny, and 4."}
    events += [
        ("response.output_text.delta", delta),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 2, "item": ANSWER_ITEM}),
        ("response.completed", {"type": "response.completed", "response": RESPONSE}),
    ]
    return sse(events)


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_responses_builtin_tools_are_requested_and_their_items_kept_and_sent_back(stream: bool) -> None:
    first = (
        ("text/event-stream", _streamed_response()) if stream else ("application/json", json.dumps(RESPONSE).encode())
    )
    wire = Wire(first, ("application/json", json.dumps(RESPONSE).encode()))
    options = OpenAIResponsesChatOptions(
        builtin_tools=({"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}})
    )
    model = OpenAIResponsesChatModel("gpt-5", api_key="k", options=options, **wire.clients())
    answer = (
        assemble(list(model.stream(Prompt("Weather, and 2+2?")))) if stream else model.call(Prompt("Weather, and 2+2?"))
    )
    assert wire.bodies[0]["tools"] == [
        {"type": "web_search"},
        {"type": "code_interpreter", "container": {"type": "auto"}},
    ]
    assert answer.text == "Sunny, and 4."
    assert answer.result is not None
    assert answer.result.output.metadata["openai_responses.builtin_items"] == [WEB_SEARCH_CALL, CODE_CALL]
    model.call(Prompt([UserMessage("Weather, and 2+2?"), answer.result.output, UserMessage("Thanks")]))
    sent = wire.bodies[1]["input"]
    assert sent[1:3] == [WEB_SEARCH_CALL, CODE_CALL], "sent back before the answer, in their order"
    assert sent[3]["role"] == "assistant"
