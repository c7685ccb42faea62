"""The whole conformance kit over the official SDK clients as transport: ``OpenAIChatModel`` and
``OpenAIResponsesChatModel`` with ``openai.OpenAI`` and ``AsyncOpenAI``, ``AnthropicChatModel`` with
``anthropic.Anthropic`` and ``AsyncAnthropic``, and with a sync ``anthropic.Anthropic`` alone (its
async modes go through a worker thread, so cancelling ``acall()``/``astream()`` crosses the bridge).
The shell's guarantees (cut streams, deadlines against stalled and trickling servers, cancel,
redaction, lifecycle) hold over an SDK client as over httpx2 (skipped when the SDKs are not
installed)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from chatclient import ChatModel
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .test_anthropic_conformance import AnthropicWire
from .test_openai_conformance import OpenAIWire
from .test_openai_responses_conformance import ResponsesWire

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


_NO_POOL = httpx2.Limits(max_keepalive_connections=0)
"""The SDK clients are the test's, and the kit runs each mode in an event loop of its own: keeping no
connection between requests leaves no socket behind when a loop ends."""


def _sdk_model(**client: Any) -> OpenAIChatModel:
    sync = openai.OpenAI(http_client=httpx2.Client(limits=_NO_POOL), **client)
    async_ = openai.AsyncOpenAI(http_client=httpx2.AsyncClient(limits=_NO_POOL), **client)
    return OpenAIChatModel("gpt-4o-mini", client=sync, async_client=async_, retry=RetryPolicy(initial_backoff=0))


class TestOpenAISdkConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return OpenAIWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        sync, async_ = httpx2.Client(transport=transport), httpx2.AsyncClient(transport=transport)
        return OpenAIChatModel(
            "gpt-4o-mini",
            client=openai.OpenAI(api_key="sk-conformance", http_client=sync, max_retries=2),
            async_client=openai.AsyncOpenAI(api_key="sk-conformance", http_client=async_, max_retries=2),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        return _sdk_model(base_url=base_url, api_key=api_key, max_retries=2)


class TestAnthropicSdkConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return AnthropicWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        client = anthropic.Anthropic(api_key="test-key", http_client=httpx2.Client(transport=transport), max_retries=2)
        return AnthropicChatModel("claude-conformance", client=client)

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        client = anthropic.Anthropic(
            base_url=base_url, api_key=api_key, http_client=httpx2.Client(limits=_NO_POOL), max_retries=2
        )
        return AnthropicChatModel("claude-conformance", client=client, retry=RetryPolicy(initial_backoff=0))


class TestOpenAIResponsesSdkConformance(ChatModelConformance):
    def wire(self) -> WireFormat:
        return ResponsesWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        sync, async_ = httpx2.Client(transport=transport), httpx2.AsyncClient(transport=transport)
        return OpenAIResponsesChatModel(
            "gpt-4o",
            client=openai.OpenAI(api_key="sk-conformance", http_client=sync, max_retries=2),
            async_client=openai.AsyncOpenAI(api_key="sk-conformance", http_client=async_, max_retries=2),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        sync = openai.OpenAI(base_url=base_url, api_key=api_key, http_client=httpx2.Client(limits=_NO_POOL))
        async_ = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, http_client=httpx2.AsyncClient(limits=_NO_POOL))
        return OpenAIResponsesChatModel(
            "gpt-4o", client=sync, async_client=async_, retry=RetryPolicy(initial_backoff=0)
        )


class TestAnthropicBothSdkClientsConformance(ChatModelConformance):
    """``AsyncAnthropic`` serves the async modes itself (no worker thread)."""

    def wire(self) -> WireFormat:
        return AnthropicWire()

    def make_model(self, transport: httpx2.MockTransport) -> ChatModel:
        sync, async_ = httpx2.Client(transport=transport), httpx2.AsyncClient(transport=transport)
        return AnthropicChatModel(
            "claude-conformance",
            client=anthropic.Anthropic(api_key="test-key", http_client=sync, max_retries=2),
            async_client=anthropic.AsyncAnthropic(api_key="test-key", http_client=async_, max_retries=2),
        )

    def make_model_at(self, base_url: str, api_key: str) -> ChatModel:
        sync = anthropic.Anthropic(base_url=base_url, api_key=api_key, http_client=httpx2.Client(limits=_NO_POOL))
        async_ = anthropic.AsyncAnthropic(
            base_url=base_url, api_key=api_key, http_client=httpx2.AsyncClient(limits=_NO_POOL)
        )
        return AnthropicChatModel(
            "claude-conformance", client=sync, async_client=async_, retry=RetryPolicy(initial_backoff=0)
        )
