"""The provider shell (``providers._transport``): lifecycle, key redaction, user agent, early configuration
errors and readable error pages, for every provider that talks through it.

Faults that need real sockets (file descriptors, an HTML 502) use the loopback server of
``loopback.py``; the rest use ``httpx2.MockTransport``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

import chatclient
from chatclient.errors import ConfigurationError, ServerError
from chatclient.prompt import Prompt
from providers._errors import error_from_response
from providers._retry import RetryPolicy
from providers._transport import USER_AGENT, ModelLifecycle
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .loopback import BAD_GATEWAY_TITLE, CHAT_REPLY, loopback

NO_RETRY = RetryPolicy(max_retries=0)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with loopback() as url:
        yield url


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))


def models(**kwargs: Any) -> list[ModelLifecycle]:
    """One model of each provider, all built with ``kwargs``."""
    return [
        OpenAIChatModel("m", api_key="sk-test", **kwargs),
        OpenAIResponsesChatModel("m", api_key="sk-test", **kwargs),
        AnthropicChatModel("m", api_key="sk-ant-test", **kwargs),
        OllamaChatModel("m", **kwargs),
    ]


# ---------------------------------------------------------------------- lifecycle


def test_fifty_asyncio_runs_leave_no_client_no_loop_and_no_descriptor(server: str) -> None:
    model = OpenAIChatModel("m", api_key="sk-test", base_url=f"{server}/ok/v1")
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def one() -> str | None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return (await model.acall(Prompt("ping"))).text

    assert asyncio.run(one()) == "pong"  # the first run pays for lazy imports and caches
    gc.collect()
    before = open_fds()

    for _ in range(50):
        asyncio.run(one())
    gc.collect()

    assert open_fds() - before == 0
    assert [ref for ref in loops if ref() is not None] == [], "closed loops are kept alive"
    assert model._http._async_clients == {}
    model.close()


def test_a_loop_closed_without_shutting_down_is_forgotten_on_the_next_request(server: str) -> None:
    """A bare ``loop.close()`` skips the hook that closes our client; the next request drops it.

    (The server closes each connection, so the dropped client holds no socket: a kept-alive one
    would be reclaimed by the collector with Python's own "unclosed socket" warning.)
    """
    model = OpenAIChatModel("m", api_key="sk-test", base_url=f"{server}/close/v1")
    loop = asyncio.new_event_loop()
    loop.run_until_complete(model.acall(Prompt("ping")))
    loop.run_until_complete(model.aclose())
    loop.close()
    stale = asyncio.new_event_loop()
    stale.run_until_complete(model.acall(Prompt("ping")))
    stale.close()  # no shutdown_asyncgens: its client stays registered for now
    ref = weakref.ref(stale)
    del stale

    asyncio.run(model.acall(Prompt("ping")))
    gc.collect()

    assert ref() is None
    assert model._http._async_clients == {}


def test_sync_close_closes_the_client_of_a_loop_that_is_not_running(server: str) -> None:
    model = OpenAIChatModel("m", api_key="sk-test", base_url=f"{server}/ok/v1")
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(model.acall(Prompt("ping")))
        ((client, _),) = model._http._async_clients.values()
        model.close()
        assert client.is_closed
        assert model._http._async_clients == {}
    finally:
        loop.close()


def test_context_managers_close_what_the_model_made_and_not_what_it_was_given() -> None:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=CHAT_REPLY))
    given = httpx2.Client(transport=transport)
    with OpenAIChatModel("m", api_key="sk-test", http_client=given) as model:
        model.call(Prompt("ping"))
    assert not given.is_closed
    given.close()

    with OpenAIChatModel("m", api_key="sk-test") as own:
        made = own._http.client()
    assert made.is_closed

    async def scenario() -> tuple[httpx2.AsyncClient, httpx2.AsyncClient]:
        given_async = httpx2.AsyncClient(transport=transport)
        async with OpenAIChatModel("m", api_key="sk-test", async_http_client=given_async) as model:
            await model.acall(Prompt("ping"))
        async with OpenAIChatModel("m", api_key="sk-test") as own:
            made_async = own._http.async_client()
        return given_async, made_async

    given_async, made_async = asyncio.run(scenario())
    assert not given_async.is_closed
    assert made_async.is_closed


@pytest.mark.parametrize("model", models(), ids=lambda m: type(m).__name__)
def test_every_model_has_close_aclose_and_both_context_managers(model: ModelLifecycle) -> None:
    with model as entered:
        assert entered is model
    sync_client = model._http.client()

    async def scenario() -> httpx2.AsyncClient:
        async with model as entered:
            assert entered is model
            return model._http.async_client()

    async_client = asyncio.run(scenario())
    assert async_client.is_closed
    assert sync_client.is_closed


def test_the_lazy_sync_client_is_made_once_when_two_threads_ask_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first construction waits until a second one starts (or a bound passes): without the lock,
    the second thread builds a second client; with it, the second thread waits and gets the first."""
    http = OpenAIChatModel("m", api_key="sk-test")._http
    made: list[object] = []
    second_started = threading.Event()
    first_inside = threading.Event()
    real = httpx2.Client

    def slow_client(**kwargs: Any) -> httpx2.Client:
        made.append(kwargs)
        if len(made) == 1:
            first_inside.set()
            second_started.wait(timeout=1.0)
        else:
            second_started.set()
        return real(**kwargs)

    monkeypatch.setattr(httpx2, "Client", slow_client)
    got: list[httpx2.Client] = []
    first = threading.Thread(target=lambda: got.append(http.client()))
    first.start()
    first_inside.wait(timeout=10)
    second = threading.Thread(target=lambda: got.append(http.client()))
    second.start()
    first.join(timeout=10)
    second.join(timeout=10)

    assert len(made) == 1
    assert got[0] is got[1]
    http.close()


# ---------------------------------------------------------------------- redaction and user agent


def capture() -> tuple[list[httpx2.Request], httpx2.Client]:
    sent: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(401, json={"error": {"message": "no", "type": "authentication_error"}})

    return sent, httpx2.Client(transport=httpx2.MockTransport(handle))


SECRET = "sk-very-secret-0123456789"

REDACTION_CASES: dict[str, Callable[[httpx2.Client], Any]] = {
    "anthropic x-api-key": lambda c: AnthropicChatModel("m", api_key=SECRET, http_client=c, retry=NO_RETRY),
    "azure api-key": lambda c: OpenAIChatModel(
        "m", base_url="https://res.openai.azure.com/openai/v1", headers={"api-key": SECRET}, http_client=c
    ),
    "openai authorization": lambda c: OpenAIChatModel("m", api_key=SECRET, http_client=c),
    "responses authorization": lambda c: OpenAIResponsesChatModel("m", api_key=SECRET, http_client=c),
    "ollama cloud authorization": lambda c: OllamaChatModel(
        "m", base_url="https://ollama.com", api_key=SECRET, http_client=c, retry=NO_RETRY
    ),
}


@pytest.mark.parametrize("case", sorted(REDACTION_CASES))
def test_no_key_shows_in_the_repr_of_the_request_headers(case: str) -> None:
    sent, client = capture()
    model = REDACTION_CASES[case](client)
    with pytest.raises(chatclient.ProviderError) as raised:
        model.call(Prompt("hi"))

    headers = sent[0].headers
    assert SECRET in "".join(headers.values()), "the key is sent"
    for shown in (repr(headers), str(headers), repr(sent[0]), repr(model), repr(raised.value), str(raised.value)):
        assert SECRET not in shown
    assert "[secure]" in repr(headers)


def test_the_user_agent_is_ours_unless_the_application_chose_one() -> None:
    sent, client = capture()
    with pytest.raises(chatclient.ProviderError):
        OpenAIChatModel("m", api_key="k", http_client=client).call(Prompt("hi"))
    assert sent[-1].headers["user-agent"] == USER_AGENT == f"chatclient/{chatclient.__version__}"

    with pytest.raises(chatclient.ProviderError):
        OpenAIChatModel("m", api_key="k", http_client=client, headers={"User-Agent": "myapp/2"}).call(Prompt("hi"))
    assert sent[-1].headers["user-agent"] == "myapp/2"

    seen: list[httpx2.Request] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=CHAT_REPLY)

    theirs = httpx2.Client(transport=httpx2.MockTransport(reply), headers={"user-agent": "their-client/1"})
    OpenAIChatModel("m", api_key="k", http_client=theirs).call(Prompt("hi"))
    assert seen[-1].headers["user-agent"] == "their-client/1"


# ---------------------------------------------------------------------- configuration found early


@pytest.mark.parametrize(
    "build",
    [
        lambda url: OpenAIChatModel("m", api_key="k", base_url=url),
        lambda url: OpenAIResponsesChatModel("m", api_key="k", base_url=url),
        lambda url: AnthropicChatModel("m", api_key="k", base_url=url),
    ],
    ids=["openai", "openai-responses", "anthropic"],
)
@pytest.mark.parametrize("url", ["api.example.com/v1", "localhost:8000/v1", "ftp://files.example.com"])
def test_a_base_url_without_an_http_scheme_fails_when_the_model_is_built(
    build: Callable[[str], object], url: str
) -> None:
    with pytest.raises(ConfigurationError, match="is not an http\\(s\\) URL"):
        build(url)


def test_openai_without_a_key_fails_early_for_openais_own_host_only() -> None:
    with pytest.raises(ConfigurationError, match="No OpenAI API key"):
        OpenAIChatModel()
    with pytest.raises(ConfigurationError, match="No OpenAI API key"):
        OpenAIChatModel("m", base_url="https://api.openai.com/v1")
    OpenAIChatModel("m", base_url="http://localhost:11434/v1")  # a local server needs no key
    OpenAIChatModel("m", api_key="")  # an explicit empty key: a gateway adds the credential
    OpenAIChatModel("m", http_client=httpx2.Client(headers={"authorization": "Bearer from-the-client"}))


@pytest.mark.parametrize("base_url", ["https://ollama.com", "ollama.com", "https://ollama.com/"])
def test_ollama_without_a_key_fails_early_for_ollama_cloud(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same shell check as OpenAI's: Ollama Cloud's own host with no key can only answer 401."""
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="No Ollama API key for Ollama Cloud"):
        OllamaChatModel("m", base_url=base_url)
    monkeypatch.setenv("OLLAMA_HOST", base_url)
    with pytest.raises(ConfigurationError, match="OLLAMA_API_KEY"):
        OllamaChatModel("m")


def test_ollama_cloud_builds_with_a_key_and_a_local_server_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    sent: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(
            200, json={"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True}
        )

    def cloud(api_key: str | None = None, http_client: httpx2.Client | None = None) -> OllamaChatModel:
        client = http_client or httpx2.Client(transport=httpx2.MockTransport(record))
        return OllamaChatModel("m", base_url="https://ollama.com", api_key=api_key, http_client=client)

    cloud(api_key="secret").call(Prompt("hi"))
    assert sent[-1].headers["authorization"] == "Bearer secret"
    cloud(api_key="").call(Prompt("hi"))  # an explicit empty key: a gateway adds the credential
    assert "authorization" not in sent[-1].headers
    authenticating = httpx2.Client(transport=httpx2.MockTransport(record), headers={"authorization": "Bearer c"})
    cloud(http_client=authenticating).call(Prompt("hi"))
    assert sent[-1].headers["authorization"] == "Bearer c"
    monkeypatch.setenv("OLLAMA_API_KEY", "from-env")
    cloud().call(Prompt("hi"))
    assert sent[-1].headers["authorization"] == "Bearer from-env"
    monkeypatch.delenv("OLLAMA_API_KEY")
    OllamaChatModel("m")  # a local server (localhost:11434) needs no key
    OllamaChatModel("m", base_url="http://gpu-box:11434")


def test_an_html_502_becomes_a_short_summary_not_the_page(server: str) -> None:
    with (
        OpenAIChatModel("m", api_key="k", base_url=f"{server}/html502/v1", retry=NO_RETRY) as model,
        pytest.raises(ServerError) as raised,
    ):
        model.call(Prompt("hi"))
    message = str(raised.value)

    assert raised.value.status == 502
    assert "HTTP 502 Bad Gateway" in message
    assert repr(BAD_GATEWAY_TITLE) in message
    assert "The upstream server did not answer in time & the gateway gave up." in message
    assert "<" not in message and "tracking-script" not in message and "font-family" not in message
    assert len(message) < 600


def test_a_plain_text_error_body_is_kept_whole_on_one_line() -> None:
    headers = httpx2.Headers({"content-type": "text/plain"})
    error = error_from_response("p", 503, headers, b"upstream\n  is down", lambda _: None)
    assert error.message == "upstream is down"
    assert error_from_response("p", 502, headers, b"", lambda _: None).message == "HTTP 502 with no body"
