"""No credential shows anywhere the library shows something: a sweep with one marker secret.

The marker is put wherever a credential can ride (an API key, a ``base_url`` password and ``?key=``,
credential ``extra_headers``, an ``extra_body`` token) and looked for in every repr and ``str``, in
every error's message and args, in observers' records and trace spans, and in the log output of
whole requests at DEBUG. Adding a type to the sweep is one line in :data:`OBJECTS` (or
:data:`PROVIDERS` for a provider).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, ChatClientRequest, ChatModel, Prompt, Usage
from chatclient._redact import MASK, RedactingLogFilter, is_secret_name, redact_mapping, redact_text, redact_url
from chatclient.errors import ChatClientError, ConfigurationError, ProviderError
from chatclient.observation import ChatObserver
from chatclient.options import ChatOptions
from providers._errors import transport_error
from providers._extras import ProviderOptions
from providers._retry import RetryPolicy
from providers._secrets import RedactedHeaders
from providers._transport import ProviderHttp, check_base_url
from providers.anthropic import AnthropicChatModel, AnthropicChatOptions
from providers.gemini import GeminiChatModel, GeminiChatOptions
from providers.ollama import OllamaChatModel, OllamaChatOptions
from providers.openai import OpenAIChatModel, OpenAIChatOptions
from providers.openai_responses import OpenAIResponsesChatModel, OpenAIResponsesChatOptions
from tests.providers.test_anthropic_conformance import AnthropicWire
from tests.providers.test_gemini_conformance import GeminiWire
from tests.providers.test_ollama_conformance import OllamaWire
from tests.providers.test_openai_conformance import OpenAIWire
from tests.providers.test_openai_responses_conformance import ResponsesWire

MARK = "mark-5ecr3t-7f1c"
"""The secret looked for: found anywhere in what is shown, it leaked."""

SECRET_URL = f"https://user:{MARK}@llm.example/v1?key={MARK}&api_key={MARK}&sig={MARK}"
SECRET_HEADERS = {
    "Authorization": f"Bearer {MARK}",
    "Proxy-Authorization": f"Basic {MARK}",
    "api-key": MARK,
    "X-Api-Key": MARK,
    "X-Auth-Token": MARK,
    "x-client-secret": MARK,
    "Cookie": f"session={MARK}",
}
SECRET_BODY = {"gateway": {"api_key": MARK, "access_token": MARK}, "callback": f"https://hook.example/?token={MARK}"}
SECRET_CONTEXT = {"db_password": MARK, "service_token": MARK}


def secret_options(cls: type[ProviderOptions]) -> ChatOptions:
    return cls(extra_headers=SECRET_HEADERS, extra_body=SECRET_BODY, tool_context=SECRET_CONTEXT, temperature=0.5)


def _client(transport: httpx2.MockTransport) -> dict[str, Any]:
    return {
        "http_client": httpx2.Client(transport=transport),
        "async_http_client": httpx2.AsyncClient(transport=transport),
    }


@dataclass(frozen=True)
class Provider:
    """A provider as the sweep needs it: its model made with the marker everywhere, its options
    class and its wire (to script replies and errors)."""

    make: Callable[..., ChatModel]
    options: type[ProviderOptions]
    wire: Any

    def model(self, transport: httpx2.MockTransport | None = None, **more: Any) -> ChatModel:
        clients = _client(transport) if transport is not None else {}
        retry = RetryPolicy(max_retries=1, initial_backoff=0.0, max_backoff=0.0)
        return self.make("m", api_key=MARK, base_url=SECRET_URL, retry=retry, **clients, **more)


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(OpenAIChatModel, OpenAIChatOptions, OpenAIWire()),
    "openai-responses": Provider(OpenAIResponsesChatModel, OpenAIResponsesChatOptions, ResponsesWire()),
    "anthropic": Provider(AnthropicChatModel, AnthropicChatOptions, AnthropicWire()),
    "ollama": Provider(OllamaChatModel, OllamaChatOptions, OllamaWire()),
    "gemini": Provider(GeminiChatModel, GeminiChatOptions, GeminiWire()),
}


def _raised(make: Callable[[], object]) -> BaseException:
    try:
        make()
    except Exception as error:
        return error
    raise AssertionError("expected an error")


def _each_provider(what: str, make: Callable[[Provider], object]) -> dict[str, Callable[[], object]]:
    """One sweep entry per provider: ``make`` given the provider, named ``"<provider> <what>"``."""
    return {f"{name} {what}": functools.partial(make, provider) for name, provider in PROVIDERS.items()}


def _answering(provider: Provider) -> ChatModel:
    return provider.model(httpx2.MockTransport(lambda request: httpx2.Response(200)))


OBJECTS: dict[str, Callable[[], object]] = {
    # one line per type that can hold a credential
    **_each_provider("options", lambda p: secret_options(p.options)),
    **_each_provider("options in a prompt", lambda p: Prompt("hi", secret_options(p.options))),
    **_each_provider("model", Provider.model),
    **_each_provider("model on an httpx2 client", _answering),
    "openai model with credential headers": lambda: OpenAIChatModel("m", base_url=SECRET_URL, headers=SECRET_HEADERS),
    "provider http": lambda: ProviderHttp(provider="p", base_url=SECRET_URL, headers={}, error_details=lambda _: None),
    "request headers": lambda: RedactedHeaders(httpx2.Headers(SECRET_HEADERS)),
    "request with advisor params": lambda: ChatClientRequest(Prompt("hi"), {**SECRET_CONTEXT, "callback": SECRET_URL}),
    "client": lambda: (
        ChatClient.builder(PROVIDERS["openai"].model()).default_options(secret_options(OpenAIChatOptions)).build()
    ),
    "base_url without a scheme": lambda: _raised(lambda: check_base_url(f"user:{MARK}@llm.example", provider="p")),
    "base_url not http": lambda: _raised(
        lambda: check_base_url(f"ftp://user:{MARK}@llm.example/?key={MARK}", provider="p")
    ),
    "missing key for a vendor host": lambda: _raised(
        lambda: OpenAIChatModel("m", base_url=f"https://u:{MARK}@api.openai.com/v1", api_key=None)
    ),
    "vertex model with a token": lambda: GeminiChatModel("m", vertex_project="p", api_key=MARK),
    "transport error quoting the url": lambda: transport_error("p", httpx2.ConnectError(f"no route to {SECRET_URL}")),
    "proxy error quoting the proxy": lambda: transport_error(
        "p", httpx2.ProxyError(f"407 from http://proxy:{MARK}@proxy.example:3128")
    ),
    "provider error quoting a url": lambda: ProviderError(f"redirected to {SECRET_URL}", provider="p", status=400),
    "configuration error quoting a url": lambda: ConfigurationError(f"cannot use {SECRET_URL}"),
}
"""Everything the sweep builds and shows, by name."""


def _shown(value: object, seen: set[int] | None = None) -> Iterator[str]:
    """Every way ``value`` is shown: repr and str, and for our errors their message, args and the
    errors they were raised from (a traceback prints all of them)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield repr(value)
    yield str(value)
    if isinstance(value, BaseException):
        yield from (repr(arg) for arg in value.args)
        yield str(getattr(value, "message", ""))
        for linked in (value.__cause__, value.__context__):
            if isinstance(linked, ChatClientError):
                yield from _shown(linked, seen)


def assert_hidden(where: str, texts: Iterable[str]) -> None:
    leaks = [text for text in texts if MARK in text]
    assert not leaks, f"{where} shows the secret: {leaks[0][:500]}"


@pytest.mark.parametrize("name", OBJECTS)
def test_nothing_shows_the_secret(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the missing-key error must be raised
    assert_hidden(name, _shown(OBJECTS[name]()))


def test_reprs_still_say_what_was_masked() -> None:
    """Masked, not dropped: the reader still sees which headers and which URL parts were there."""
    shown = repr(secret_options(OpenAIChatOptions))
    assert f"'Authorization': '{MASK}'" in shown and f"'api_key': '{MASK}'" in shown and "temperature=0.5" in shown
    model = repr(PROVIDERS["anthropic"].model())
    assert f"base_url='https://user:{MASK}@llm.example/v1?key={MASK}&api_key={MASK}&sig={MASK}'" in model


# ---------------------------------------------------------------------- whole requests


class Recorder(ChatObserver):
    """Keeps every record an observer is handed, to show them all afterwards."""

    def __init__(self) -> None:
        self.records: list[object] = []

    def _keep(self, *records: object) -> None:
        self.records.extend(records)

    def call_started(self, info: Any) -> Any:
        self._keep(info)

    def call_finished(self, token: Any, info: Any, response: Any, error: Any) -> None:
        self._keep(info, response, error)

    def model_started(self, info: Any) -> Any:
        self._keep(info, info.prompt, info.chat_model)

    def model_finished(self, token: Any, info: Any, response: Any, error: Any) -> None:
        self._keep(info, response, error)

    def retry(self, info: Any) -> None:
        self._keep(info, info.error)


def _script(*replies: httpx2.Response | Exception) -> httpx2.MockTransport:
    pending = list(replies)

    def answer(request: httpx2.Request) -> httpx2.Response:
        reply = pending.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return httpx2.MockTransport(answer)


SCRIPTS: dict[str, Callable[[Any], list[httpx2.Response | Exception]]] = {
    "retried then answered": lambda wire: [
        wire.error(500, "busy", {}),
        wire.reply("Hello.", [], Usage(prompt_tokens=3, completion_tokens=2)),
    ],
    "rejected key": lambda wire: [wire.error(401, "invalid key", {})],
    "connection failed twice": lambda wire: [httpx2.ConnectError(f"no route to {SECRET_URL}")] * 2,
}
"""What the server does, by name: each script is run against every provider, call and stream."""


def _spans_text(exporter: Any) -> Iterator[str]:
    for span in exporter.get_finished_spans():
        yield repr(dict(span.attributes or {}))
        yield str(span.status.description)
        for event in span.events:
            yield repr(dict(event.attributes or {}))


@pytest.mark.parametrize("mode", ["call", "stream", "acall"])
@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_request_shows_no_secret(
    provider: str, script: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Logs at DEBUG, the error, the observers' records and the trace spans of one request whose
    model, URL and options carry the secret."""
    tracing = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chatclient.tracing import OpenTelemetryObserver

    exporter = InMemorySpanExporter()
    tracer_provider = tracing.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    recorder = Recorder()
    spec = PROVIDERS[provider]
    wire = spec.wire
    replies = SCRIPTS[script](wire)
    if mode == "stream" and not isinstance(replies[-1], Exception) and replies[-1].status_code == 200:
        replies[-1] = wire.stream_reply("Hello.", [], Usage(prompt_tokens=3, completion_tokens=2))
    model = spec.model(_script(*replies))
    tracer = OpenTelemetryObserver(tracer_provider=tracer_provider, capture_content=True)
    client = ChatClient.builder(model).observers(recorder, tracer).build()
    request = client.prompt().user("Hi").options(secret_options(spec.options)).advisors(params=SECRET_CONTEXT)
    caplog.set_level(logging.DEBUG)
    error: BaseException | None = None
    try:
        if mode == "call":
            request.call().content()
        elif mode == "stream":
            "".join(request.stream().content())
        else:
            asyncio.run(request.acall().content())
    except ProviderError as raised:
        error = raised
    finally:
        tracer_provider.shutdown()
    assert (error is None) == (script == "retried then answered"), error
    logged = [caplog.text, *(record.getMessage() for record in caplog.records)]
    assert any("HTTP Request" in line for line in logged) or script.startswith("connection")
    assert_hidden("the log", logged)
    assert_hidden("the error", _shown(error))
    assert_hidden("the observers' records", (text for record in recorder.records for text in _shown(record)))
    assert_hidden("the trace", _spans_text(exporter))
    assert exporter.get_finished_spans(), "the tracer recorded nothing: the trace check proves nothing"


def test_a_request_through_an_official_sdk_shows_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    """httpx2 logs the SDK's requests too, the URL whole; the SDK's own DEBUG lines, the model's
    repr and the error show nothing either."""
    openai = pytest.importorskip("openai")
    wire = OpenAIWire()
    replies = _script(
        wire.reply("Hello.", [], Usage(prompt_tokens=3, completion_tokens=2)), wire.error(401, "bad key", {})
    )
    sdk = openai.OpenAI(
        api_key=MARK,
        base_url=f"https://user:{MARK}@llm.example/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=replies),
    )
    model = OpenAIChatModel("m", client=sdk)
    caplog.set_level(logging.DEBUG)
    model.call(Prompt("hi", secret_options(OpenAIChatOptions)))
    error = _raised(lambda: model.call(Prompt("hi", secret_options(OpenAIChatOptions))))
    assert any("HTTP Request" in record.getMessage() for record in caplog.records)
    assert_hidden("the SDK's log", [caplog.text, *(record.getMessage() for record in caplog.records)])
    assert_hidden("the SDK model", _shown(model))
    assert_hidden("the SDK's error", _shown(error))


# ---------------------------------------------------------------------- the rule itself


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("Authorization", True),
        ("proxy-authorization", True),
        ("api-key", True),
        ("X-API-KEY", True),
        ("x-goog-api-key", True),
        ("X-Auth-Token", True),
        ("client_secret", True),
        ("DB_PASSWORD", True),
        ("cookie", True),
        ("key", True),
        ("sig", True),
        ("x-team", False),
        ("content-type", False),
        ("max_tokens", False),
        ("x-ratelimit-remaining-tokens", False),
        ("anthropic-version", False),
    ],
)
def test_which_names_are_secret(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("http://localhost:11434", "http://localhost:11434"),
        ("https://user@host/v1", "https://user@host/v1"),
        ("https://user:pw@host/v1", f"https://user:{MASK}@host/v1"),
        ("https://host/v1?key=k&alt=sse", f"https://host/v1?key={MASK}&alt=sse"),
        ("https://host/p?Api_Key=k&max_tokens=3#top", f"https://host/p?Api_Key={MASK}&max_tokens=3#top"),
        ("user:pw@host", f"user:{MASK}@host"),
        ("http://[::1:80/?key=k", MASK),
    ],
)
def test_urls_keep_everything_but_the_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_text_and_mappings() -> None:
    assert redact_text("no url here: key=k") == "no url here: key=k"
    assert (
        redact_text("failed (https://u:pw@h/x?token=t): retry") == f"failed (https://u:{MASK}@h/x?token={MASK}): retry"
    )
    assert redact_mapping({"X-Api-Key": "k", "n": {"secret": "s", "max_tokens": 3}, "u": "https://h/?sig=s"}) == {
        "X-Api-Key": MASK,
        "n": {"secret": MASK, "max_tokens": 3},
        "u": f"https://h/?sig={MASK}",
    }


def test_the_log_filter_keeps_other_records_as_they_were() -> None:
    plain = logging.LogRecord(
        "httpx2", logging.INFO, __file__, 1, "HTTP Request: %s %s %d", ("POST", "https://h/v1", 200), None
    )
    assert RedactingLogFilter().filter(plain) and plain.getMessage() == "HTTP Request: POST https://h/v1 200"
    assert plain.args == ("POST", "https://h/v1", 200)
    keyed = logging.LogRecord("httpx2", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("POST", SECRET_URL), None)
    assert (
        RedactingLogFilter().filter(keyed) and MARK not in keyed.getMessage() and "llm.example/v1" in keyed.getMessage()
    )
