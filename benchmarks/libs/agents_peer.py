"""The OpenAI Agents SDK (OpenAI wire only): an ``Agent`` on ``OpenAIChatCompletionsModel`` with an
``AsyncOpenAI`` client on our async httpx2 client, ``Runner.run`` / ``Runner.run_sync``, tools with
``function_tool``. Tracing is switched off (it would try to export spans over the network). Its
confirmation flow is ``needs_approval=True``: interruptions, ``RunState.to_string`` / ``from_string``,
``approve``, run again."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from .. import tools
from ..backends import Backend
from ..canned import API_KEY, OPENAI_MODEL, PROMPT, S2_PROMPT, S3_PROMPT, S7_PROMPT


class AgentsAdapter:
    label = "OpenAI Agents SDK"

    def __init__(self, wire: str, backend: Backend) -> None:
        if wire != "openai":
            raise NotImplementedError("the Agents SDK speaks the OpenAI wire formats only")
        import openai
        from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled

        set_tracing_disabled(True)
        client = openai.AsyncOpenAI(api_key=API_KEY, base_url=backend.base_url, http_client=backend.async_client())
        model = OpenAIChatCompletionsModel(model=OPENAI_MODEL, openai_client=client)

        def agent(*tool_list: Any) -> Any:
            return Agent(name="bench", model=model, tools=list(tool_list))

        self.plain = agent()
        self.weather = agent(function_tool(tools.get_weather))
        self.lookup_async = agent(function_tool(tools.lookup_async))
        self.lookup_blocking = agent(function_tool(tools.lookup_blocking))
        self.booking = agent(function_tool(tools.book_flight, needs_approval=True))
        self.forecast = agent(
            *(
                function_tool(fn, name_override=name, description_override=desc)
                for name, desc, fn in tools.forecast_tools()
            )
        )
        self.store: dict[str, str] = {}

    def call(self) -> Any:
        from agents import Runner

        return Runner.run_sync(self.plain, PROMPT).final_output

    async def acall(self) -> Any:
        from agents import Runner

        return (await Runner.run(self.plain, PROMPT)).final_output

    def tool_loop(self) -> Any:
        from agents import Runner

        return Runner.run_sync(self.weather, S2_PROMPT).final_output

    async def atool_loop(self) -> Any:
        from agents import Runner

        return (await Runner.run(self.weather, S2_PROMPT)).final_output

    def s3_blocking(self) -> Any:
        from agents import Runner

        return Runner.run_sync(self.lookup_blocking, S3_PROMPT).final_output

    async def as3_async(self) -> Any:
        from agents import Runner

        return (await Runner.run(self.lookup_async, S3_PROMPT)).final_output

    NA: ClassVar[dict[str, str]] = {"stream": "the Agents SDK streams only from async code (Runner.run_streamed)"}

    async def astream(self) -> AsyncIterator[str]:
        from agents import Runner
        from openai.types.responses import ResponseTextDeltaEvent

        result = Runner.run_streamed(self.plain, PROMPT)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                yield event.data.delta

    async def aconfirm_round_trip(self) -> Any:
        from agents import Runner, RunState

        paused = await Runner.run(self.booking, S7_PROMPT)
        assert paused.interruptions, "the booking did not pause"
        state_id = secrets.token_urlsafe(24)
        self.store[state_id] = paused.to_state().to_string()
        state = await RunState.from_string(self.booking, self.store.pop(state_id))
        for item in state.get_interruptions():
            state.approve(item)
        return (await Runner.run(self.booking, state)).final_output

    async def atools50_loop(self) -> Any:
        from agents import Runner

        return (await Runner.run(self.forecast, S2_PROMPT)).final_output
