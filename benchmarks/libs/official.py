"""The official SDKs, ``openai`` and ``anthropic``, with their defaults and the httpx2 clients injected.

They have no tool loop: it is hand-written, as their docs show (append the assistant message, one
result per call), running the calls of a reply concurrently like the raw floor does.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import tools
from ..backends import Backend
from ..canned import ANTHROPIC_MODEL, API_KEY, OPENAI_MODEL, PROMPT, S2_PROMPT, S3_PROMPT, S7_PROMPT, raw_tool_specs

Call = tuple[str, str, dict[str, Any]]


class _Base:
    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=8)
        self.store: dict[str, Any] = {}
        self.tools: dict[str, Callable[..., Any]] = {"get_weather": tools.get_weather, "book_flight": tools.book_flight}
        self.tools.update({name: fn for name, _, fn in tools.forecast_tools()})

    # Wire-specific pieces, filled in by the subclasses.
    def _create(self, messages: list[Any], scenario: str | None) -> Any:
        raise NotImplementedError

    async def _acreate(self, messages: list[Any], scenario: str | None) -> Any:
        raise NotImplementedError

    def _parse(self, response: Any) -> tuple[str | None, list[Call], Any]:
        raise NotImplementedError

    def _results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        raise NotImplementedError

    def _loop(self, scenario: str, prompt: str, run: Callable[[list[Call]], list[str]]) -> str | None:
        messages: list[Any] = [{"role": "user", "content": prompt}]
        while True:
            text, calls, assistant = self._parse(self._create(messages, scenario))
            if not calls:
                return text
            messages += [assistant, *self._results(calls, run(calls))]

    async def _aloop(self, scenario: str, prompt: str, run: Callable[[list[Call]], Any]) -> str | None:
        messages: list[Any] = [{"role": "user", "content": prompt}]
        while True:
            text, calls, assistant = self._parse(await self._acreate(messages, scenario))
            if not calls:
                return text
            messages += [assistant, *self._results(calls, await run(calls))]

    def _run(self, calls: list[Call]) -> list[str]:
        return [self.tools[name](**args) for _, name, args in calls]

    async def _arun(self, calls: list[Call]) -> list[str]:
        return [self.tools[name](**args) for _, name, args in calls]

    def call(self) -> str | None:
        return self._parse(self._create([{"role": "user", "content": PROMPT}], None))[0]

    async def acall(self) -> str | None:
        return self._parse(await self._acreate([{"role": "user", "content": PROMPT}], None))[0]

    def tool_loop(self) -> str | None:
        return self._loop("s2", S2_PROMPT, self._run)

    async def atool_loop(self) -> str | None:
        return await self._aloop("s2", S2_PROMPT, self._arun)

    def s3_blocking(self) -> str | None:
        return self._loop(
            "s3", S3_PROMPT, lambda calls: list(self.pool.map(lambda c: tools.lookup_blocking(**c[2]), calls))
        )

    async def as3_async(self) -> str | None:
        async def run(calls: list[Call]) -> list[str]:
            return list(await asyncio.gather(*(tools.lookup_async(**c[2]) for c in calls)))

        return await self._aloop("s3", S3_PROMPT, run)

    async def aconfirm_round_trip(self) -> str | None:
        messages: list[Any] = [{"role": "user", "content": S7_PROMPT}]
        _, calls, assistant = self._parse(await self._acreate(messages, "s7confirm"))
        state_id = secrets.token_urlsafe(24)
        self.store[state_id] = json.dumps({"messages": [*messages, self._plain(assistant)], "calls": calls})
        state = json.loads(self.store.pop(state_id))
        calls = [tuple(c) for c in state["calls"]]
        messages = [*state["messages"], *self._results(calls, self._run(calls))]
        return self._parse(await self._acreate(messages, "s7confirm"))[0]

    def _plain(self, assistant: Any) -> Any:
        return assistant

    async def atools50_loop(self) -> str | None:
        return await self._aloop("s7tools50", S2_PROMPT, self._arun)


class OpenAISdkAdapter(_Base):
    label = "openai SDK"

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        import openai

        self.client = openai.OpenAI(api_key=API_KEY, base_url=backend.base_url, http_client=backend.sync_client())
        self.aclient = openai.AsyncOpenAI(
            api_key=API_KEY, base_url=backend.base_url, http_client=backend.async_client()
        )

    def _kwargs(self, messages: list[Any], scenario: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": OPENAI_MODEL, "messages": messages}
        if scenario:
            kwargs["tools"] = [
                {"type": "function", "function": {"name": n, "description": d, "parameters": s}}
                for n, d, s in raw_tool_specs(scenario)
            ]
        return kwargs

    def _create(self, messages: list[Any], scenario: str | None) -> Any:
        return self.client.chat.completions.create(**self._kwargs(messages, scenario))

    async def _acreate(self, messages: list[Any], scenario: str | None) -> Any:
        return await self.aclient.chat.completions.create(**self._kwargs(messages, scenario))

    def _parse(self, response: Any) -> tuple[str | None, list[Call], Any]:
        message = response.choices[0].message
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]
        return message.content, calls, message.to_dict()

    def _results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        return [{"role": "tool", "tool_call_id": c[0], "content": out} for c, out in zip(calls, outputs, strict=True)]

    def stream(self) -> Iterator[str]:
        chunks = self.client.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content

    async def astream(self) -> AsyncIterator[str]:
        chunks = await self.aclient.chat.completions.create(
            model=OPENAI_MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                yield chunk.choices[0].delta.content


class AnthropicSdkAdapter(_Base):
    label = "anthropic SDK"

    def __init__(self, backend: Backend) -> None:
        super().__init__()
        import anthropic

        self.client = anthropic.Anthropic(api_key=API_KEY, base_url=backend.base_url, http_client=backend.sync_client())
        self.aclient = anthropic.AsyncAnthropic(
            api_key=API_KEY, base_url=backend.base_url, http_client=backend.async_client()
        )

    def _kwargs(self, messages: list[Any], scenario: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": ANTHROPIC_MODEL, "max_tokens": 1024, "messages": messages}
        if scenario:
            kwargs["tools"] = [{"name": n, "description": d, "input_schema": s} for n, d, s in raw_tool_specs(scenario)]
        return kwargs

    def _create(self, messages: list[Any], scenario: str | None) -> Any:
        return self.client.messages.create(**self._kwargs(messages, scenario))

    async def _acreate(self, messages: list[Any], scenario: str | None) -> Any:
        return await self.aclient.messages.create(**self._kwargs(messages, scenario))

    def _parse(self, response: Any) -> tuple[str | None, list[Call], Any]:
        text = "".join(b.text for b in response.content if b.type == "text") or None
        calls = [(b.id, b.name, b.input) for b in response.content if b.type == "tool_use"]
        return text, calls, {"role": "assistant", "content": response.content}

    def _plain(self, assistant: Any) -> Any:
        return {"role": "assistant", "content": [b.to_dict() for b in assistant["content"]]}

    def _results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        blocks = [
            {"type": "tool_result", "tool_use_id": c[0], "content": out} for c, out in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "content": blocks}]

    def stream(self) -> Iterator[str]:
        events = self.client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        for event in events:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text

    async def astream(self) -> AsyncIterator[str]:
        events = await self.aclient.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, messages=[{"role": "user", "content": PROMPT}], stream=True
        )
        async for event in events:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield event.delta.text


def make(wire: str, backend: Backend) -> Any:
    return OpenAISdkAdapter(backend) if wire == "openai" else AnthropicSdkAdapter(backend)
