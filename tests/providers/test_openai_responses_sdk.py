"""The official ``openai`` SDK as transport: same body, our parsing, SDK errors mapped into ours."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest

from chatclient import ChatResponse, FinishReason, Prompt
from chatclient.errors import APIConnectionError, AuthenticationError, ServerError
from chatclient.events import ModelEvent
from providers.openai_responses import OpenAIResponsesChatModel
from tests.providers.fixtures import Replay
from tests.providers.model_events import assemble, deltas, texts
from tests.providers.test_openai_responses import wire_deltas

openai = pytest.importorskip("openai")

FOLDER = "openai-responses"
SDK_KEY = "sk-sdk-secret-key-1234"


def sdk_clients(handler: Any) -> tuple[Any, Any]:
    transport = httpx2.MockTransport(handler)
    sync = openai.OpenAI(api_key=SDK_KEY, http_client=httpx2.Client(transport=transport), max_retries=0)
    async_ = openai.AsyncOpenAI(api_key=SDK_KEY, http_client=httpx2.AsyncClient(transport=transport), max_retries=0)
    return sync, async_


def model(handler: Any, *, use_async: bool) -> OpenAIResponsesChatModel:
    sync, async_ = sdk_clients(handler)
    return OpenAIResponsesChatModel("gpt-4o", client=async_ if use_async else sync)


async def _collect(m: OpenAIResponsesChatModel, prompt: Prompt) -> list[ModelEvent]:
    return [event async for event in m.astream(prompt)]


def run(m: OpenAIResponsesChatModel, mode: str) -> tuple[ChatResponse, list[ModelEvent]]:
    prompt = Prompt("What is 4200 + 42?")
    if mode == "call":
        return m.call(prompt), []
    if mode == "acall":
        return asyncio.run(m.acall(prompt)), []
    events = list(m.stream(prompt)) if mode == "stream" else asyncio.run(_collect(m, prompt))
    return assemble(events), events


@pytest.mark.parametrize("use_async", [False, True], ids=["OpenAI", "AsyncOpenAI"])
@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
def test_sdk_transport(mode: str, use_async: bool) -> None:
    """Both SDK clients serve all four modes (the other flavour is bridged)."""
    streamed = "stream" in mode
    replay = Replay(FOLDER, "d_stream_text" if streamed else "a_plain_text")
    m = model(replay, use_async=use_async)
    assert "client=" in repr(m)
    response, events = run(m, mode)
    assert response.text == "4200 + 42 equals 4242."
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.usage.prompt_tokens == 16
    if streamed:
        assert deltas(events) == wire_deltas("d_stream_text", 0), "the SDK transport streams the same events"
        assert len(texts(events)) == 10
    request = replay.sent[0]
    assert str(request.url) == "https://api.openai.com/v1/responses"
    assert request.headers["authorization"] == f"Bearer {SDK_KEY}", "the SDK's own auth applies"
    sent = replay.sent_json(0)
    assert sent["input"] == [{"role": "user", "content": "What is 4200 + 42?"}]
    assert sent.get("stream", False) is streamed and sent["store"] is False


@pytest.mark.parametrize("use_async", [False, True], ids=["OpenAI", "AsyncOpenAI"])
@pytest.mark.parametrize("mode", ["call", "stream"])
def test_sdk_errors_are_mapped(mode: str, use_async: bool) -> None:
    replay = Replay(FOLDER, "f_error_401_invalid_api_key")
    with pytest.raises(AuthenticationError) as raised:
        run(model(replay, use_async=use_async), mode if not use_async else "a" + mode)
    assert raised.value.status == 401 and raised.value.error_type == "invalid_api_key"
    assert raised.value.request_id == "req_39477683f0a842109fac21a8bf24c001"
    assert SDK_KEY not in str(raised.value)

    replay = Replay(FOLDER, "f_error_500_server_error")
    with pytest.raises(ServerError) as server:
        run(model(replay, use_async=use_async), mode)
    assert server.value.status == 500 and server.value.error_type == "server_error"


def test_sdk_connection_errors_are_mapped() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    with pytest.raises(APIConnectionError):
        model(handler, use_async=False).call(Prompt("hi"))
    with pytest.raises(APIConnectionError):
        asyncio.run(model(handler, use_async=True).acall(Prompt("hi")))
