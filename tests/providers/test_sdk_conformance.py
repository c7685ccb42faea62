"""The whole conformance kit over the official SDK clients as transport: ``OpenAIChatModel`` with
``openai.OpenAI`` and ``AsyncOpenAI``, and ``AnthropicChatModel`` with a sync ``anthropic.Anthropic``
alone (its async modes go through a worker thread, so cancelling ``astream()`` crosses the bridge).
The shell's guarantees (cut streams, deadlines, cancel, redaction, lifecycle) hold over an SDK client
as over httpx2 (skipped when the SDKs are not installed)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from chatclient import ChatModel
from chatclient.testing.conformance import ChatModelConformance, WireFormat
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.openai import OpenAIChatModel

from .test_anthropic_conformance import AnthropicWire
from .test_openai_conformance import OpenAIWire

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
