"""``OpenAIChatModel`` itself: credentials, compatible servers, retries, streams, the SDK transport."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, ChatResponse, Prompt
from chatclient.errors import (
    APIConnectionError,
    AuthenticationError,
    MalformedResponseError,
    RateLimitError,
)
from chatclient.events import ModelEvent
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel, OpenAIChatOptions
from tests.providers.model_events import texts

KEY = "sk-very-secret-0123456789"
Handler = Callable[[httpx2.Request], httpx2.Response]


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def text_reply(text: str = "Hello!") -> httpx2.Response:
    body = {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    return httpx2.Response(200, json=body)


def sse(*events: dict[str, Any], done: bool = True) -> bytes:
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def text_event(content: str, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": content} if content else {}
    return {"id": "chatcmpl-s", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def stream_reply(body: bytes) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


class Recorder:
    """A MockTransport handler serving replies in order (the last one repeats) and keeping requests."""

    def __init__(self, *replies: Callable[[], httpx2.Response]) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]()

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


def model_on(recorder: Recorder, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIChatModel:
    transport = httpx2.MockTransport(recorder)
    kwargs.setdefault("retry", RetryPolicy(initial_backoff=0))
    return OpenAIChatModel(
        model,
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **kwargs,
    )


def collect(model: OpenAIChatModel, prompt: Prompt) -> list[Any]:
    async def run() -> list[Any]:
        return [c async for c in model.astream(prompt)]

    return asyncio.run(run())


# ---------------------------------------------------------------------- credentials


def test_the_key_never_shows_in_repr_or_errors() -> None:
    unauthorized = {
        "error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}
    }
    recorder = Recorder(lambda: httpx2.Response(401, json=unauthorized))
    model = model_on(recorder, api_key=KEY, headers={"api-key": "azure-secret-key"})
    assert KEY not in repr(model) and KEY not in str(model) and KEY not in repr(vars(model))
    assert "azure-secret-key" not in repr(vars(model))
    with pytest.raises(AuthenticationError) as raised:
        model.call(Prompt("hi"))
    assert KEY not in str(raised.value) and KEY not in repr(raised.value) and KEY not in repr(raised.value.body)
    assert recorder.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert recorder.requests[0].headers["api-key"] == "azure-secret-key"


def test_environment_key_is_used_for_openai_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    recorder = Recorder(text_reply)
    model_on(recorder).call(Prompt("hi"))
    assert recorder.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert str(recorder.requests[-1].url) == "https://api.openai.com/v1/chat/completions"
    model_on(recorder, base_url="http://localhost:11434/v1").call(Prompt("hi"))
    assert "authorization" not in recorder.requests[-1].headers, "a local server never gets the OpenAI key"
    model_on(recorder, base_url="http://localhost:8000/v1", api_key="vllm-key").call(Prompt("hi"))
    assert recorder.requests[-1].headers["authorization"] == "Bearer vllm-key"
    model_on(recorder, base_url="https://res.openai.azure.com/openai/v1").call(Prompt("hi"))
    assert "authorization" not in recorder.requests[-1].headers, "nor does Azure"
    model_on(recorder, base_url="https://api.openai.com/v1/").call(Prompt("hi"))
    assert recorder.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    model_on(recorder, api_key="").call(Prompt("hi"))
    assert "authorization" not in recorder.requests[-1].headers, "an empty key means no header"


def test_base_url_from_environment_goes_with_the_environment_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm.local:8000/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
    recorder = Recorder(text_reply)
    model = model_on(recorder)
    model.call(Prompt("hi"))
    assert str(recorder.requests[0].url) == "http://vllm.local:8000/v1/chat/completions"
    assert recorder.requests[0].headers["authorization"] == "Bearer EMPTY"
    assert repr(model) == "OpenAIChatModel(model='gpt-4o-mini', base_url='http://vllm.local:8000/v1')"


def test_default_options_carry_the_model() -> None:
    assert OpenAIChatModel(api_key="k").default_options.model == "gpt-4o-mini"
    assert OpenAIChatModel("gpt-4.1", api_key="k").default_options.model == "gpt-4.1"
    options = OpenAIChatOptions(model="o4-mini", seed=3)
    from_options = OpenAIChatModel(api_key="k", options=options).default_options
    assert from_options is options
    overridden = OpenAIChatModel("gpt-4o", api_key="k", options=options).default_options
    assert overridden.model == "gpt-4o" and overridden.seed == 3


def test_defaults_apply_to_a_direct_call_and_request_options_win() -> None:
    recorder = Recorder(text_reply)
    model = model_on(recorder, options=OpenAIChatOptions(seed=1, temperature=0.1), api_key="k")
    model.call(Prompt("hi", OpenAIChatOptions(temperature=0.9)))
    body = recorder.body()
    assert (body["model"], body["seed"], body["temperature"]) == ("gpt-4o-mini", 1, 0.9)


@pytest.mark.parametrize(
    ("base_url", "key"),
    [
        (None, "max_completion_tokens"),
        ("https://res.openai.azure.com/openai/v1", "max_completion_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
        ("https://api.groq.com/openai/v1", "max_tokens"),
    ],
)
def test_max_tokens_name_follows_the_server(base_url: str | None, key: str) -> None:
    recorder = Recorder(text_reply)
    model_on(recorder, base_url=base_url, api_key="k").call(Prompt("hi", OpenAIChatOptions(max_tokens=50)))
    assert recorder.body()[key] == 50


def test_import_does_not_load_the_sdk() -> None:
    code = "import sys, providers, providers.openai; print('openai' in sys.modules, 'anthropic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False"


# ---------------------------------------------------------------------- retries


def rate_limited(retry_after: str | None = None) -> Callable[[], httpx2.Response]:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    return lambda: httpx2.Response(429, json=body, headers=headers)


def server_error() -> httpx2.Response:
    return httpx2.Response(500, json={"error": {"message": "boom", "type": "server_error", "code": None}})


@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
def test_429_and_5xx_are_retried_then_succeed(mode: str) -> None:
    ok = (lambda: stream_reply(sse(text_event("Hi"), text_event("", "stop")))) if "stream" in mode else text_reply
    recorder = Recorder(rate_limited("0"), server_error, ok)
    model = model_on(recorder, api_key="k")
    if mode == "call":
        text = model.call(Prompt("hi")).text
    elif mode == "acall":
        text = asyncio.run(model.acall(Prompt("hi"))).text
    elif mode == "stream":
        text = "".join(texts(model.stream(Prompt("hi"))))
    else:
        text = "".join(texts(collect(model, Prompt("hi"))))
    assert text in ("Hello!", "Hi")
    assert len(recorder.requests) == 3


def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    recorder = Recorder(rate_limited("1.5"), text_reply)
    assert model_on(recorder, api_key="k").call(Prompt("hi")).text == "Hello!"
    assert waits == [1.5]


def test_retry_after_is_honoured_async(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float, *args: Any, **kwargs: Any) -> Any:
        waits.append(delay)
        return await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    recorder = Recorder(rate_limited("2"), text_reply)
    assert asyncio.run(model_on(recorder, api_key="k").acall(Prompt("hi"))).text == "Hello!"
    assert 2 in waits


def test_a_retry_after_longer_than_the_cap_is_raised_at_once() -> None:
    recorder = Recorder(rate_limited("3600"), text_reply)
    with pytest.raises(RateLimitError) as raised:
        model_on(recorder, api_key="k").call(Prompt("hi"))
    assert raised.value.retry_after == 3600 and len(recorder.requests) == 1


class BrokenStream(httpx2.SyncByteStream):
    """Two good events, then the connection drops."""

    def __iter__(self) -> Iterator[bytes]:
        yield sse(text_event("Hel"), text_event("lo"), done=False)
        raise httpx2.ReadError("connection reset by peer")


class AsyncBrokenStream(httpx2.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield sse(text_event("Hel"), text_event("lo"), done=False)
        raise httpx2.ReadError("connection reset by peer")


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_stream_is_never_retried_once_it_has_delivered(mode: str) -> None:
    body = BrokenStream() if mode == "stream" else AsyncBrokenStream()
    recorder = Recorder(lambda: httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body))
    model = model_on(recorder, api_key="k")
    received: list[ModelEvent] = []
    with pytest.raises(APIConnectionError):
        if mode == "stream":
            for event in model.stream(Prompt("hi")):
                received.append(event)
        else:

            async def run() -> None:
                async for event in model.astream(Prompt("hi")):
                    received.append(event)

            asyncio.run(run())
    assert texts(received) == ["Hel", "lo"], "what arrived was delivered as it came"
    assert len(recorder.requests) == 1, "no retry after a chunk reached the caller"


# ---------------------------------------------------------------------- odd servers


def test_malformed_stream_event_raises() -> None:
    recorder = Recorder(lambda: stream_reply(b'data: {"id": "x", "choices": [\n\n'))
    with pytest.raises(MalformedResponseError):
        list(model_on(recorder, api_key="k").stream(Prompt("hi")))


def test_mid_stream_error_event_raises_after_the_delivered_text() -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error", "code": None}}
    recorder = Recorder(lambda: stream_reply(sse(text_event("partial"), error)))
    received: list[ModelEvent] = []
    with pytest.raises(Exception) as raised:
        for event in model_on(recorder, api_key="k").stream(Prompt("hi")):
            received.append(event)
    assert texts(received) == ["partial"]
    assert type(raised.value).__name__ == "ServerError" and "The server had an error" in str(raised.value)


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_server_that_ignores_stream_true_still_works(mode: str) -> None:
    recorder = Recorder(text_reply)
    model = model_on(recorder, base_url="http://localhost:1234/v1")
    events = list(model.stream(Prompt("hi"))) if mode == "stream" else collect(model, Prompt("hi"))
    assert [e.text for e in events if isinstance(e, ChatResponse)] == ["Hello!"] and len(events) == 1
    assert recorder.body()["stream"] is True


def test_structured_output_through_the_client() -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    recorder = Recorder(lambda: text_reply('{"name": "Kyoto"}'))
    client = ChatClient.create(model_on(recorder, api_key="k"))
    assert client.prompt("A city").call().entity(City, native=True) == City(name="Kyoto")
    response_format = recorder.body()["response_format"]
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["name"] == "City"
    assert response_format["json_schema"]["schema"]["required"] == ["name"]
