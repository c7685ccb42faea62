"""A deadline bounds the whole exchange, not each read: against a server that sends its headers at
once and then its body a few bytes every 0.2 s (each read well within any read timeout), every
provider, in all four modes, over httpx2 and over an official SDK client, stops at the deadline.

Proved with the server's own view (:mod:`chatclient.testing.fault_server`, ``/trickle``): the server
would trickle for a minute; it saw the client hang up (``hung_up``), never sent the body to its end,
and saw one request only (nothing retried past the deadline). The error is the deadline's
(``APITimeoutError``, ``error_type == "deadline_exceeded"``). The one clock is a generous bound
(deadline + 5 s, against the server's 60 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import APITimeoutError
from chatclient.model import ChatModel
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.conformance import USAGE, WireFormat
from chatclient.testing.fault_server import FaultServer, fault_server
from providers._deadline import DEADLINE_EXCEEDED
from providers._retry import RetryPolicy
from providers._sdk import SdkTransport
from providers._shell import ProviderModel
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .test_anthropic_conformance import AnthropicWire
from .test_ollama_conformance import OllamaWire
from .test_openai_conformance import OpenAIWire
from .test_openai_responses_conformance import ResponsesWire

DEADLINE = 0.5
TRICKLE_FOR = 60.0
"""How long the server would go on sending: far longer than any deadline here."""
MARGIN = 5.0

WIRES: dict[str, Callable[[], WireFormat]] = {
    "openai": OpenAIWire,
    "responses": ResponsesWire,
    "anthropic": AnthropicWire,
    "ollama": OllamaWire,
}

Make = Callable[[str], ChatModel]
"""base URL -> a model whose deadline is :data:`DEADLINE`."""


def over_httpx2(provider: str) -> Make:
    """The model's numeric ``timeout`` is the deadline (a limit on the whole request)."""
    models: dict[str, Make] = {
        "openai": lambda url: OpenAIChatModel("gpt-4o-mini", base_url=url, api_key="k", timeout=DEADLINE),
        "responses": lambda url: OpenAIResponsesChatModel("gpt-4o", base_url=url, api_key="k", timeout=DEADLINE),
        "anthropic": lambda url: AnthropicChatModel("claude-x", base_url=url, api_key="k", timeout=DEADLINE),
        "ollama": lambda url: OllamaChatModel("llama3", base_url=url, timeout=DEADLINE),
    }
    return models[provider]


def over_sdk(provider: str, use_async: bool) -> Make:
    """``RetryPolicy(deadline=)`` is the deadline; the SDK client's own timeout is its default (600 s)."""
    retry = RetryPolicy(initial_backoff=0, deadline=DEADLINE)
    if provider == "anthropic":
        anthropic = pytest.importorskip("anthropic")
        kind: Any = anthropic.AsyncAnthropic if use_async else anthropic.Anthropic
        return lambda url: AnthropicChatModel(
            "claude-x", client=kind(base_url=url, api_key="k", max_retries=2), retry=retry
        )
    openai = pytest.importorskip("openai")
    kind = openai.AsyncOpenAI if use_async else openai.OpenAI
    if provider == "responses":
        return lambda url: OpenAIResponsesChatModel(client=kind(base_url=url, api_key="k", max_retries=2), retry=retry)
    return lambda url: OpenAIChatModel(
        "gpt-4o-mini", client=kind(base_url=url, api_key="k", max_retries=2), retry=retry
    )


def _close(model: ChatModel) -> None:
    assert isinstance(model, ProviderModel)
    model.close()
    transport = model._transport
    if isinstance(transport, SdkTransport):  # the SDK clients are the test's
        if transport.sdk is not None:
            transport.sdk.close()
        if transport.async_sdk is not None:
            asyncio.run(transport.async_sdk.close())


def reply_for(provider: str, mode: str) -> httpx2.Response:
    wire = WIRES[provider]()
    text = "Hello from a server that takes its time."
    return wire.stream_reply(text, [], USAGE) if "stream" in mode else wire.reply(text, [], USAGE)


@pytest.fixture
def trickling() -> Iterator[Callable[[httpx2.Response], FaultServer]]:
    """Starts the fault server for a reply; stopped when the test ends."""
    with contextlib.ExitStack() as servers:
        yield lambda reply: servers.enter_context(fault_server(reply, trickle_for=TRICKLE_FOR))


def check_cut_at_the_deadline(server: FaultServer, make: Make, mode: str, scenario: str = "trickle") -> None:
    """``mode`` against ``scenario`` fails with the deadline's error, once, the connection closed mid-reply."""
    model = make(f"{server.url}/{scenario}")
    started = time.monotonic()
    try:
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, ChatClient.create(model).prompt("hi"))
        took = time.monotonic() - started
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED and not raised.value.retryable, repr(raised.value)
    assert f"deadline of {DEADLINE:g} s" in raised.value.message
    visits = server.settled()
    assert len(visits) == 1, "nothing is retried past the deadline"
    assert visits[0].hung_up and not visits[0].finished, "the client closed the connection mid-reply"
    assert took < DEADLINE + MARGIN, f"{took:.1f} s against a deadline of {DEADLINE} s"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", sorted(WIRES))
def test_a_trickling_body_is_cut_at_the_deadline_over_httpx2(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    check_cut_at_the_deadline(trickling(reply_for(provider, mode)), over_httpx2(provider), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_a_trickling_body_is_cut_at_the_deadline_over_an_sdk_client(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    """The SDK client of the mode's kind: ``OpenAI`` for call and stream, ``AsyncOpenAI`` for the others."""
    make = over_sdk(provider, use_async=mode.startswith("a"))
    check_cut_at_the_deadline(trickling(reply_for(provider, mode)), make, mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_trickling_body_is_cut_across_the_sdk_bridges(
    trickling: Callable[[httpx2.Response], FaultServer], mode: str
) -> None:
    """The other kind of client: a sync one serves the async modes (a worker thread), an async one the
    sync modes (the sync bridge); the deadline holds across either."""
    make = over_sdk("openai", use_async=not mode.startswith("a"))
    check_cut_at_the_deadline(trickling(reply_for("openai", mode)), make, mode)


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_a_trickling_error_body_is_cut_at_the_deadline(
    trickling: Callable[[httpx2.Response], FaultServer], mode: str
) -> None:
    """A 500 whose body trickles in: the error body is read within the deadline too (and not retried)."""
    server = trickling(OpenAIWire().error(500, "slow failure", {}))
    check_cut_at_the_deadline(server, over_httpx2("openai"), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_a_trickling_error_body_is_cut_at_the_deadline_over_an_sdk_client(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    """The SDK reads an error's body itself (to build its status error): a sync client's read is
    watched from the response's arrival (the SDK client's event hooks), an async one's exchange is
    cancelled at the deadline."""
    server = trickling(WIRES[provider]().error(500, "slow failure", {}))
    check_cut_at_the_deadline(server, over_sdk(provider, use_async=mode.startswith("a")), mode)


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_the_shorter_of_the_policy_deadline_and_the_model_timeout_applies(
    trickling: Callable[[httpx2.Response], FaultServer], mode: str
) -> None:
    """A model ``timeout`` of 30 s and a policy deadline of :data:`DEADLINE`: the policy's cuts the body."""

    def make(url: str) -> ChatModel:
        policy = RetryPolicy(initial_backoff=0, deadline=DEADLINE)
        return OpenAIChatModel("gpt-4o-mini", base_url=url, api_key="k", timeout=30.0, retry=policy)

    check_cut_at_the_deadline(trickling(reply_for("openai", mode)), make, mode)


def test_a_reply_that_comes_in_time_is_read_whole_under_a_deadline() -> None:
    """The guarded read changes nothing for a reply that ends in time."""
    with fault_server(reply_for("openai", "call")) as server:
        model = OpenAIChatModel("gpt-4o-mini", base_url=f"{server.url}/whole", api_key="k", timeout=DEADLINE * 10)
        try:
            texts = [ChatClient.create(model).prompt("hi").call().content() for _ in range(2)]
        finally:
            _close(model)
        visits = server.settled()
    assert texts == ["Hello from a server that takes its time."] * 2
    assert len(visits) == 2 and not any(visit.hung_up for visit in visits)
