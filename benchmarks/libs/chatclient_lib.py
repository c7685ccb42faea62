"""chatclient: ``ChatClient`` over ``providers.openai.OpenAIChatModel`` / ``providers.anthropic.AnthropicChatModel`` /
``providers.gemini.GeminiChatModel``
with their defaults, the httpx2 clients injected, tools with ``@tool``; its own tool loop (the
``ToolCallingAdvisor``) and its confirmation flow with an ``InMemoryPendingToolCallStore``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from typing import Any

from chatclient import ChatClient, ToolCallDecision, ToolCallDecisions, awaiting_decision, tool
from chatclient.tools import InMemoryPendingToolCallStore

from .. import tools
from ..backends import Backend
from ..canned import (
    ANTHROPIC_MODEL,
    API_KEY,
    BEDROCK_KEYS,
    BEDROCK_MODEL,
    BEDROCK_REGION,
    CATALOG_SIZES,
    GEMINI_MODEL,
    LOOP_SIZES,
    OPENAI_MODEL,
    PROMPT,
    S2_PROMPT,
    S3_PROMPT,
    S7_PROMPT,
)


def make_model(wire: str, backend: Backend) -> Any:
    http, ahttp = backend.sync_client(), backend.async_client()
    if wire == "openai":
        from providers.openai import OpenAIChatModel

        return OpenAIChatModel(
            model=OPENAI_MODEL, api_key=API_KEY, base_url=backend.base_url, http_client=http, async_http_client=ahttp
        )
    if wire == "gemini":
        from providers.gemini import GeminiChatModel

        return GeminiChatModel(
            model=GEMINI_MODEL, api_key=API_KEY, base_url=backend.base_url, http_client=http, async_http_client=ahttp
        )
    if wire == "bedrock":
        from providers.bedrock import BedrockChatModel

        return BedrockChatModel(
            BEDROCK_MODEL, region=BEDROCK_REGION, base_url=backend.base_url, http_client=http,
            async_http_client=ahttp, aws_access_key_id=BEDROCK_KEYS["access_key"],
            aws_secret_access_key=BEDROCK_KEYS["secret_key"],
        )  # fmt: skip
    from providers.anthropic import AnthropicChatModel

    return AnthropicChatModel(
        model=ANTHROPIC_MODEL, api_key=API_KEY, base_url=backend.base_url, http_client=http, async_http_client=ahttp
    )


class ChatClientAdapter:
    label = "chatclient"

    def __init__(self, wire: str, backend: Backend) -> None:
        self.model = make_model(wire, backend)
        self.plain = ChatClient.create(self.model)
        self.store = InMemoryPendingToolCallStore()

    # Each scenario's client (and its tools) is built on first use, as raw httpx2 builds its tool lists:
    # a process that runs one scenario (S5's workers) holds no other scenario's tools on its heap.
    @cached_property
    def weather(self) -> ChatClient:
        return ChatClient.builder(self.model).default_tools(tool(tools.get_weather)).build()

    @cached_property
    def lookup_async(self) -> ChatClient:
        return ChatClient.builder(self.model).default_tools(tool(tools.lookup_async)).build()

    @cached_property
    def lookup_blocking(self) -> ChatClient:
        return ChatClient.builder(self.model).default_tools(tool(tools.lookup_blocking)).build()

    @cached_property
    def booking(self) -> ChatClient:
        gated = tool(requires_confirmation=True)(tools.book_flight)
        return ChatClient.builder(self.model).default_tools(gated).build()

    @cached_property
    def forecast(self) -> ChatClient:
        forecast = [tool(name=name, description=desc)(fn) for name, desc, fn in tools.forecast_tools()]
        return ChatClient.builder(self.model).default_tools(*forecast).build()

    @cached_property
    def catalog(self) -> dict[int, ChatClient]:
        return {n: self._with_tools(self.model, tools.catalog_tools(n)) for n in CATALOG_SIZES if n}

    @cached_property
    def loop(self) -> dict[int, ChatClient]:
        return {n: self._with_tools(self.model, tools.loop_tools(n)) for n in LOOP_SIZES}

    @staticmethod
    def _with_tools(model: Any, specs: list[tuple[str, str, Any]]) -> ChatClient:
        return ChatClient.builder(model).default_tools(*(tool(name=n, description=d)(fn) for n, d, fn in specs)).build()

    # S1
    def call(self) -> str | None:
        return self.plain.prompt(PROMPT).call().content()

    async def acall(self) -> str | None:
        return await self.plain.prompt(PROMPT).acall().content()

    # S2
    def tool_loop(self) -> str | None:
        return self.weather.prompt(S2_PROMPT).call().content()

    async def atool_loop(self) -> str | None:
        return await self.weather.prompt(S2_PROMPT).acall().content()

    # S3
    def s3_blocking(self) -> str | None:
        return self.lookup_blocking.prompt(S3_PROMPT).call().content()

    async def as3_async(self) -> str | None:
        return await self.lookup_async.prompt(S3_PROMPT).acall().content()

    # S4
    def stream(self) -> Iterator[str]:
        return self.plain.prompt(PROMPT).stream().content()

    def astream(self) -> AsyncIterator[str]:
        return self.plain.prompt(PROMPT).astream().content()

    # S7
    async def aconfirm_round_trip(self) -> str | None:
        paused = await self.booking.prompt(S7_PROMPT).acall().chat_client_response()
        pending = awaiting_decision(paused)
        assert pending is not None, "the booking did not pause"
        state_id = self.store.save(pending)
        pending = self.store.take(state_id)
        decisions = ToolCallDecisions.of(ToolCallDecision.allow(call_id) for call_id in pending.awaiting_ids)
        return await self.booking.prompt().resume(pending, decisions).acall().content()

    async def atools50_loop(self) -> str | None:
        return await self.forecast.prompt(S2_PROMPT).acall().content()

    # S8a: one call offering n tools, answered with text (0 tools is S1's call)
    def call_tools50(self) -> str | None:
        return self.catalog[50].prompt(PROMPT).call().content()

    async def acall_tools50(self) -> str | None:
        return await self.catalog[50].prompt(PROMPT).acall().content()

    def call_tools200(self) -> str | None:
        return self.catalog[200].prompt(PROMPT).call().content()

    async def acall_tools200(self) -> str | None:
        return await self.catalog[200].prompt(PROMPT).acall().content()

    # S8b: the 5-round loop offering n tools on every round
    def loop5_tools1(self) -> str | None:
        return self.loop[1].prompt(S2_PROMPT).call().content()

    async def aloop5_tools1(self) -> str | None:
        return await self.loop[1].prompt(S2_PROMPT).acall().content()

    def loop5_tools50(self) -> str | None:
        return self.loop[50].prompt(S2_PROMPT).call().content()

    async def aloop5_tools50(self) -> str | None:
        return await self.loop[50].prompt(S2_PROMPT).acall().content()
