"""The official ``openai`` SDK as ``OpenAIChatModel``'s transport (skipped when it is not installed)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from chatclient import Prompt
from chatclient.errors import APIConnectionError, AuthenticationError
from chatclient.events import ModelEvent
from providers.openai import OpenAIChatModel, OpenAIChatOptions

from .model_events import assemble, texts
from .test_openai_model import Recorder, collect, sse, stream_reply, text_event, text_reply

openai = pytest.importorskip("openai")


def sdk_clients(recorder: Recorder, **kwargs: Any) -> tuple[Any, Any]:
    transport = httpx2.MockTransport(recorder)
    kwargs.setdefault("api_key", "sk-sdk-key")
    kwargs.setdefault("max_retries", 0)
    sync = openai.OpenAI(http_client=httpx2.Client(transport=transport), **kwargs)
    async_ = openai.AsyncOpenAI(http_client=httpx2.AsyncClient(transport=transport), **kwargs)
    return sync, async_


@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
@pytest.mark.parametrize("which", ["both", "sync-only", "async-only"])
def test_sdk_transport(mode: str, which: str) -> None:
    if "stream" in mode:
        recorder = Recorder(lambda: stream_reply(sse(text_event("Hel"), text_event("lo"), text_event("", "stop"))))
    else:
        recorder = Recorder(lambda: text_reply("Hello"))
    sync, async_ = sdk_clients(recorder)
    clients = {"both": (sync, async_), "sync-only": (sync, None), "async-only": (async_, None)}[which]
    model = OpenAIChatModel("gpt-4o-mini", client=clients[0], async_client=clients[1])
    prompt = Prompt("hi", OpenAIChatOptions(max_tokens=5))
    events: list[ModelEvent]
    if mode == "call":
        events = [model.call(prompt)]
    elif mode == "acall":
        events = [asyncio.run(model.acall(prompt))]
    elif mode == "stream":
        events = list(model.stream(prompt))
    else:
        events = collect(model, prompt)
    assert assemble(events).text == "Hello"
    if "stream" in mode:
        assert texts(events) == ["Hel", "lo"], "deltas pass through the SDK unbuffered"
    request = recorder.requests[0]
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-sdk-key", "the SDK's auth applies"
    body = json.loads(request.content)
    assert body["model"] == "gpt-4o-mini" and body["max_completion_tokens"] == 5
    assert body.get("stream", False) == ("stream" in mode)


@pytest.mark.parametrize("mode", ["call", "acall", "stream"])
def test_sdk_errors_are_mapped(mode: str) -> None:
    body = {
        "error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}
    }
    recorder = Recorder(lambda: httpx2.Response(401, json=body, headers={"x-request-id": "req_sdk"}))
    sync, async_ = sdk_clients(recorder)
    model = OpenAIChatModel("gpt-4o-mini", client=sync, async_client=async_)
    with pytest.raises(AuthenticationError) as raised:
        if mode == "call":
            model.call(Prompt("hi"))
        elif mode == "acall":
            asyncio.run(model.acall(Prompt("hi")))
        else:
            list(model.stream(Prompt("hi")))
    error = raised.value
    assert (error.status, error.error_type, error.request_id) == (401, "invalid_api_key", "req_sdk")
    assert "sk-sdk-key" not in str(error)


def test_sdk_connection_errors_are_mapped() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    sync = openai.OpenAI(api_key="k", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(refuse)))
    with pytest.raises(APIConnectionError):
        OpenAIChatModel("m", client=sync).call(Prompt("hi"))


def test_azure_client_as_transport() -> None:
    recorder = Recorder(text_reply)
    azure = openai.AzureOpenAI(
        api_key="azure-key",
        api_version="2024-10-21",
        azure_endpoint="https://res.openai.azure.com",
        azure_deployment="my-deployment",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(recorder)),
    )
    model = OpenAIChatModel("gpt-4o", client=azure)
    assert model.call(Prompt("hi", OpenAIChatOptions(max_tokens=7))).text == "Hello!"
    request = recorder.requests[0]
    assert request.url.path == "/openai/deployments/my-deployment/chat/completions"
    assert request.url.params["api-version"] == "2024-10-21"
    assert request.headers["api-key"] == "azure-key"
    assert json.loads(request.content)["max_completion_tokens"] == 7
    assert "azure-key" not in repr(model)
