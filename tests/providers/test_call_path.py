"""The async call path: the model's ``acall`` hands back the transport's coroutine itself, whose
first attempt is the one written for every async request (``_asend``); an error building the request
still surfaces when the call is awaited, and a failed first attempt is retried as before."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, Prompt
from chatclient.errors import ConfigurationError, ServerError
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel
from providers.openai.options import OpenAIChatOptions

REPLY = {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                                "finish_reason": "stop"}]}  # fmt: skip


def _model(handler: Any, **kwargs: Any) -> OpenAIChatModel:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return OpenAIChatModel("m", api_key="k", base_url="http://t.example/v1", async_http_client=client, **kwargs)


async def test_the_transports_one_attempt_stands_between_the_callers_coroutine_and_the_clients_send() -> None:
    frames: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "caller":
            frames.append(frame.f_code.co_name)
            frame = frame.f_back  # type: ignore[assignment]
        return httpx2.Response(200, json=REPLY)

    model = _model(handler)

    async def caller() -> str | None:
        return (await model.acall(Prompt("hi"))).result.output.text  # type: ignore[union-attr]

    assert await caller() == "hi"
    above_send = frames[frames.index("send") + 1 :]
    assert above_send == ["_asend", "apost_parsed"]


async def test_a_clients_plain_call_awaits_its_chain_from_the_terminal_itself() -> None:
    frames: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "caller":
            frames.append(frame.f_code.co_name)
            frame = frame.f_back  # type: ignore[assignment]
        return httpx2.Response(200, json=REPLY)

    client = ChatClient.create(_model(handler))

    async def caller() -> str | None:
        return await client.prompt("hi").acall().content()

    assert await caller() == "hi"
    # The chain's model call, the tool loop's driver, the terminal's own coroutine: no other layer.
    # (The loop no longer skips the chain's model call: benchmarks/results/2026-12-06-mechanisms.md.)
    assert frames[frames.index("send") + 1 :] == [
        "_asend",
        "apost_parsed",
        "terminal",
        "aadvise_call",
        "_run",
    ]
    assert client.usage.calls == 1


async def test_an_error_building_the_request_is_raised_when_the_call_is_awaited() -> None:
    model = _model(lambda request: httpx2.Response(200, json=REPLY))
    bad = Prompt("hi", OpenAIChatOptions(model="m", extra_body={"x": 1}))

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ConfigurationError("no body")

    model.build_body = broken  # type: ignore[method-assign]
    pending = model.acall(bad)  # nothing raised yet
    with pytest.raises(ConfigurationError, match="no body"):
        await pending


async def test_a_failed_first_attempt_is_retried_and_a_lasting_failure_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(seconds: float) -> None:
        return None

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    statuses = iter([503, 200, 503, 503])

    def handler(request: httpx2.Request) -> httpx2.Response:
        status = next(statuses)
        return httpx2.Response(status, json=REPLY if status == 200 else {"error": {"message": "busy"}})

    model = _model(handler, retry=RetryPolicy(max_retries=1, initial_backoff=0.01))
    assert (await model.acall(Prompt("hi"))).result.output.text == "hi"  # type: ignore[union-attr]
    with pytest.raises(ServerError, match="busy"):
        await model.acall(Prompt("hi"))
