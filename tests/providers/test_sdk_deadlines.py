"""A caller's time limit holds over the official SDK transports as it does over httpx2: a request's
``timeout`` (``spec.timeout(...)``) and ``RetryPolicy(deadline=)``, with the user's own
``openai.OpenAI``/``AsyncOpenAI`` (Chat Completions and Responses) and ``anthropic.Anthropic``/
``AsyncAnthropic`` clients.

Proved with the server's view (:mod:`tests.providers.stalling_server`): how many attempts reached it
and that each was abandoned by the client, never answered; and the error says the deadline was the
cause (``error_type == DEADLINE_EXCEEDED``). No test measures time; each stall is bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import APITimeoutError, ServerError
from chatclient.model import ChatModel
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from providers._deadline import DEADLINE_EXCEEDED
from providers._retry import RetryPolicy
from providers._sdk import SdkTransport
from providers._shell import ProviderModel
from providers.anthropic import AnthropicChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .stalling_server import StallingServer, stalling_server

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SdkModel = Callable[[str, bool, Any], ChatModel]
"""``(base_url, async client?, retry policy)`` → a model over an SDK client of that kind."""


def _openai_chat(base_url: str, use_async: bool, retry: Any) -> ChatModel:
    kind = openai.AsyncOpenAI if use_async else openai.OpenAI
    return OpenAIChatModel("gpt-4o-mini", client=kind(base_url=base_url, api_key="k", max_retries=2), retry=retry)


def _openai_responses(base_url: str, use_async: bool, retry: Any) -> ChatModel:
    kind = openai.AsyncOpenAI if use_async else openai.OpenAI
    return OpenAIResponsesChatModel(client=kind(base_url=base_url, api_key="k", max_retries=2), retry=retry)


def _anthropic(base_url: str, use_async: bool, retry: Any) -> ChatModel:
    kind = anthropic.AsyncAnthropic if use_async else anthropic.Anthropic
    return AnthropicChatModel("claude-x", client=kind(base_url=base_url, api_key="k", max_retries=2), retry=retry)


SDKS: dict[str, SdkModel] = {"openai": _openai_chat, "responses": _openai_responses, "anthropic": _anthropic}


@pytest.fixture
def server() -> Iterator[StallingServer]:
    with stalling_server() as running:
        yield running


def _close(model: ChatModel) -> None:
    """The SDK clients are the test's: close them (an async one in a loop of its own)."""
    assert isinstance(model, ProviderModel) and isinstance(model._transport, SdkTransport)
    transport = model._transport
    if transport.sdk is not None:
        transport.sdk.close()
    if transport.async_sdk is not None:
        asyncio.run(transport.async_sdk.close())


@pytest.mark.parametrize("sdk", sorted(SDKS))
@pytest.mark.parametrize("mode", MODES)
def test_a_request_timeout_bounds_an_sdk_request(server: StallingServer, sdk: str, mode: str) -> None:
    """The SDK would wait its 600 s per attempt and retry twice; the request allows 0.3 s in all."""
    model = SDKS[sdk](f"{server.url}/stall", mode.startswith("a"), RetryPolicy(initial_backoff=0))
    try:
        spec = ChatClient.create(model).prompt("hi").timeout(0.3)
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, spec)
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED and not raised.value.retryable, "the deadline was the cause"
    assert "deadline of 0.3 s" in raised.value.message and "after 1 attempt " in raised.value.message
    (attempt,) = server.settled()
    assert attempt.abandoned and not attempt.answered, "the caller hung up on the stalled attempt"


@pytest.mark.parametrize("sdk", sorted(SDKS))
@pytest.mark.parametrize("use_async", [False, True], ids=["sync-client", "async-client"])
def test_under_a_deadline_a_retry_is_taken_and_the_last_attempt_cut(
    server: StallingServer, sdk: str, use_async: bool
) -> None:
    """A 503, one retry (the SDK client's ``max_retries`` allow it), then a stall cut by the policy's
    deadline: the SDK's own retry loop cannot bound the total, so under a deadline the shell runs it."""
    model = SDKS[sdk](f"{server.url}/busy1", use_async, RetryPolicy(initial_backoff=0, deadline=0.5))
    try:
        spec = ChatClient.create(model).prompt("hi")
        with pytest.raises(APITimeoutError) as raised:
            run_spec("acall" if use_async else "call", spec)
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED
    assert "deadline of 0.5 s" in raised.value.message and "after 2 attempts" in raised.value.message
    first, second = server.settled()
    assert first.answered and second.abandoned and not second.answered


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_a_wait_past_the_deadline_is_not_taken_over_an_sdk(server: StallingServer, sdk: str) -> None:
    """A 503 asking for 30 s against a 5 s deadline: raised at once; the SDK does not wait it out."""
    model = SDKS[sdk](f"{server.url}/slow503", False, RetryPolicy(deadline=5.0))
    try:
        with pytest.raises(APITimeoutError) as raised:
            run_spec("call", ChatClient.create(model).prompt("hi"))
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED
    assert "retry in 30.00 s would end past it" in raised.value.message
    assert isinstance(raised.value.__cause__, ServerError)
    assert len(server.settled()) == 1


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_an_sdk_stream_is_bounded_while_it_is_read(server: StallingServer, mode: str) -> None:
    """A stream that goes silent after its first delta is abandoned at the deadline, over the SDK too."""
    model = _openai_chat(f"{server.url}/stallmid", mode == "astream", None)
    try:
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, ChatClient.create(model).prompt("hi").timeout(0.4))
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED
    (attempt,) = server.settled()
    assert attempt.abandoned


def _with_timeout(sdk: str, base_url: str, use_async: bool, timeout: Any) -> ChatModel:
    """A model over an SDK client built with ``timeout=`` (the retry policy would retry with no pause)."""
    retry = RetryPolicy(initial_backoff=0)
    if sdk == "anthropic":
        kind: Any = anthropic.AsyncAnthropic if use_async else anthropic.Anthropic
        client = kind(base_url=base_url, api_key="k", max_retries=2, timeout=timeout)
        return AnthropicChatModel("claude-x", client=client, retry=retry)
    kind = openai.AsyncOpenAI if use_async else openai.OpenAI
    client = kind(base_url=base_url, api_key="k", max_retries=2, timeout=timeout)
    if sdk == "responses":
        return OpenAIResponsesChatModel(client=client, retry=retry)
    return OpenAIChatModel("gpt-4o-mini", client=client, retry=retry)


@pytest.mark.parametrize("sdk", sorted(SDKS))
@pytest.mark.parametrize("use_async", [False, True], ids=["sync-client", "async-client"])
def test_a_numeric_sdk_client_timeout_is_the_deadline_of_the_request(
    server: StallingServer, sdk: str, use_async: bool
) -> None:
    """``OpenAI(timeout=0.3)`` is read as a model's numeric ``timeout=``: the limit of the whole
    request, not of each of the SDK's three attempts."""
    model = _with_timeout(sdk, f"{server.url}/stall", use_async, 0.3)
    try:
        with pytest.raises(APITimeoutError) as raised:
            run_spec("acall" if use_async else "call", ChatClient.create(model).prompt("hi"))
    finally:
        _close(model)
    assert raised.value.error_type == DEADLINE_EXCEEDED
    assert "deadline of 0.3 s was reached after 1 attempt " in raised.value.message
    (attempt,) = server.settled()
    assert attempt.abandoned and not attempt.answered


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_an_sdk_timeout_object_limits_each_attempt_only(server: StallingServer, sdk: str) -> None:
    """An ``httpx2.Timeout`` on the SDK client keeps its per-attempt meaning: the SDK's own retries run."""
    model = _with_timeout(sdk, f"{server.url}/stall", False, httpx2.Timeout(0.2))
    try:
        with pytest.raises(APITimeoutError) as raised:
            run_spec("call", ChatClient.create(model).prompt("hi"))
    finally:
        _close(model)
    assert raised.value.error_type != DEADLINE_EXCEEDED
    assert len(server.settled()) == 3
