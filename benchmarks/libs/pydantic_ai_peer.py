"""pydantic-ai: an ``Agent`` on ``OpenAIChatModel`` / ``AnthropicModel``, whose provider gets an
``AsyncOpenAI`` / ``AsyncAnthropic`` client on our async httpx2 client (pydantic-ai is async inside:
``run_sync`` and ``run_stream_sync`` drive the same async code). Its own tool loop; its confirmation flow
is deferred tools (``requires_approval=True``, ``DeferredToolRequests`` → ``DeferredToolResults``) with
the message history kept as JSON in a dict."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .. import tools
from ..backends import Backend
from ..canned import ANTHROPIC_MODEL, API_KEY, OPENAI_MODEL, PROMPT, S2_PROMPT, S3_PROMPT, S7_PROMPT


class PydanticAIAdapter:
    label = "pydantic-ai"

    def __init__(self, wire: str, backend: Backend) -> None:
        from pydantic_ai import Agent, DeferredToolRequests, Tool

        def make_model() -> Any:
            if wire == "openai":
                import openai
                from pydantic_ai.models.openai import OpenAIChatModel
                from pydantic_ai.providers.openai import OpenAIProvider

                client = openai.AsyncOpenAI(
                    api_key=API_KEY, base_url=backend.base_url, http_client=backend.async_client()
                )
                return OpenAIChatModel(OPENAI_MODEL, provider=OpenAIProvider(openai_client=client))
            import anthropic
            from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
            from pydantic_ai.providers.anthropic import AnthropicProvider

            aclient = anthropic.AsyncAnthropic(
                api_key=API_KEY, base_url=backend.base_url, http_client=backend.async_client()
            )
            # With no max_tokens it would send the model's maximum and stream behind the scenes; 4096 is
            # what chatclient sends by default.
            settings = AnthropicModelSettings(max_tokens=4096)
            return AnthropicModel(
                ANTHROPIC_MODEL, provider=AnthropicProvider(anthropic_client=aclient), settings=settings
            )

        # The sync API runs the async code on pydantic-ai's own event loop: it gets its own client, so
        # that pooled loopback connections never cross loops.
        model, sync_model = make_model(), make_model()
        self.plain = Agent(model)
        self.plain_sync = Agent(sync_model)
        self.weather = Agent(model, tools=[tools.get_weather])
        self.weather_sync = Agent(sync_model, tools=[tools.get_weather])
        self.lookup_async = Agent(model, tools=[tools.lookup_async])
        self.lookup_blocking = Agent(sync_model, tools=[tools.lookup_blocking])
        self.booking = Agent(
            model, tools=[Tool(tools.book_flight, requires_approval=True)], output_type=[str, DeferredToolRequests]
        )
        self.forecast = Agent(
            model, tools=[Tool(fn, name=name, description=desc) for name, desc, fn in tools.forecast_tools()]
        )
        self.store: dict[str, tuple[bytes, list[str]]] = {}

    # S1
    def call(self) -> Any:
        return self.plain_sync.run_sync(PROMPT).output

    async def acall(self) -> Any:
        return (await self.plain.run(PROMPT)).output

    # S2 / S3
    def tool_loop(self) -> Any:
        return self.weather_sync.run_sync(S2_PROMPT).output

    async def atool_loop(self) -> Any:
        return (await self.weather.run(S2_PROMPT)).output

    def s3_blocking(self) -> Any:
        return self.lookup_blocking.run_sync(S3_PROMPT).output

    async def as3_async(self) -> Any:
        return (await self.lookup_async.run(S3_PROMPT)).output

    # S4
    def stream(self) -> Iterator[str]:
        result = self.plain_sync.run_stream_sync(PROMPT)
        yield from result.stream_text(delta=True, debounce_by=None)

    async def astream(self) -> AsyncIterator[str]:
        async with self.plain.run_stream(PROMPT) as result:
            async for text in result.stream_text(delta=True, debounce_by=None):
                yield text

    # S7
    async def aconfirm_round_trip(self) -> Any:
        from pydantic_ai import DeferredToolRequests, DeferredToolResults, ModelMessagesTypeAdapter

        paused = await self.booking.run(S7_PROMPT)
        requests = paused.output
        assert isinstance(requests, DeferredToolRequests), "the booking did not pause"
        state_id = secrets.token_urlsafe(24)
        ids = [call.tool_call_id for call in requests.approvals]
        self.store[state_id] = (ModelMessagesTypeAdapter.dump_json(paused.all_messages()), ids)
        stored, ids = self.store.pop(state_id)
        history = ModelMessagesTypeAdapter.validate_json(stored)
        results = DeferredToolResults(approvals={call_id: True for call_id in ids})
        return (await self.booking.run(message_history=history, deferred_tool_results=results)).output

    async def atools50_loop(self) -> Any:
        return (await self.forecast.run(S2_PROMPT)).output
