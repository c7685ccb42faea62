"""LangChain: ``ChatOpenAI`` / ``ChatAnthropic`` with their defaults, tools with ``langchain_core.tools.tool``.

langchain-core has no tool loop of its own (agents live in ``langchain``/LangGraph), so the loop is the
one its tool-calling guide shows: ``bind_tools``, ``invoke``, one ``ToolMessage`` per call from
``tool.invoke(tool_call)``; the calls of one reply run concurrently with ``tool.batch`` / ``abatch``.
``ChatAnthropic`` takes no HTTP client, so its ``anthropic`` clients are built on ours and put in the
cached properties it would otherwise fill.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

from .. import tools
from ..backends import Backend
from ..canned import ANTHROPIC_MODEL, API_KEY, OPENAI_MODEL, PROMPT, S2_PROMPT, S3_PROMPT


def _text(message: Any) -> str | None:
    return message.text or None


class LangChainAdapter:
    label = "LangChain"

    def __init__(self, wire: str, backend: Backend) -> None:
        from langchain_core.tools import tool

        if wire == "openai":
            from langchain_openai import ChatOpenAI

            llm: Any = ChatOpenAI(
                model=OPENAI_MODEL,
                api_key=API_KEY,
                base_url=backend.base_url,
                http_client=backend.sync_client(),
                http_async_client=backend.async_client(),
            )
        else:
            import anthropic
            from langchain_anthropic import ChatAnthropic

            llm = ChatAnthropic(model=ANTHROPIC_MODEL, api_key=API_KEY, base_url=backend.base_url)
            params = llm._client_params
            llm.__dict__["_client"] = anthropic.Client(**params, http_client=backend.sync_client())
            llm.__dict__["_async_client"] = anthropic.AsyncClient(**params, http_client=backend.async_client())
        self.llm = llm
        self.weather = tool(tools.get_weather)
        self.lookup_async = tool(tools.lookup_async)
        self.lookup_blocking = tool(tools.lookup_blocking)
        self.forecast = [tool(name, description=desc)(fn) for name, desc, fn in tools.forecast_tools()]
        self.llm_weather = llm.bind_tools([self.weather])
        self.llm_lookup_async = llm.bind_tools([self.lookup_async])
        self.llm_lookup_blocking = llm.bind_tools([self.lookup_blocking])
        self.llm_forecast = llm.bind_tools(self.forecast)
        self.by_name = {t.name: t for t in (self.weather, *self.forecast)}

    # S1
    def call(self) -> str | None:
        return _text(self.llm.invoke(PROMPT))

    async def acall(self) -> str | None:
        return _text(await self.llm.ainvoke(PROMPT))

    # S2 / S3 / S7
    def _loop(self, llm: Any, prompt: str, run: Any) -> str | None:
        from langchain_core.messages import HumanMessage

        messages: list[Any] = [HumanMessage(prompt)]
        while True:
            reply = llm.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return _text(reply)
            messages.extend(run(reply.tool_calls))

    async def _aloop(self, llm: Any, prompt: str, run: Any) -> str | None:
        from langchain_core.messages import HumanMessage

        messages: list[Any] = [HumanMessage(prompt)]
        while True:
            reply = await llm.ainvoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return _text(reply)
            messages.extend(await run(reply.tool_calls))

    def _run(self, calls: list[Any]) -> list[Any]:
        return [self.by_name[c["name"]].invoke(c) for c in calls]

    async def _arun(self, calls: list[Any]) -> list[Any]:
        return [await self.by_name[c["name"]].ainvoke(c) for c in calls]

    def tool_loop(self) -> str | None:
        return self._loop(self.llm_weather, S2_PROMPT, self._run)

    async def atool_loop(self) -> str | None:
        return await self._aloop(self.llm_weather, S2_PROMPT, self._arun)

    def s3_blocking(self) -> str | None:
        return self._loop(self.llm_lookup_blocking, S3_PROMPT, self.lookup_blocking.batch)

    async def as3_async(self) -> str | None:
        return await self._aloop(self.llm_lookup_async, S3_PROMPT, self.lookup_async.abatch)

    # S4
    def stream(self) -> Iterator[str]:
        for chunk in self.llm.stream(PROMPT):
            text = chunk.text
            if text:
                yield text

    async def astream(self) -> AsyncIterator[str]:
        async for chunk in self.llm.astream(PROMPT):
            text = chunk.text
            if text:
                yield text

    # S7
    NA: ClassVar[dict[str, str]] = {
        "aconfirm_round_trip": "langchain-core has no confirmation flow (human-in-the-loop is LangGraph's)"
    }

    async def atools50_loop(self) -> str | None:
        return await self._aloop(self.llm_forecast, S2_PROMPT, self._arun)
