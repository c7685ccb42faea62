"""The floor: hand-built JSON, one POST with httpx2, ``json.loads``, a hand-written tool loop.

No validation, no retries, no types: what it costs to talk to the API at all. Tool calls of one reply
run concurrently (``asyncio.gather`` / a thread pool), the best a hand-written loop can do. On the
Bedrock wire every request is also signed, with the very signer chatclient uses (botocore's SigV4,
through ``providers.bedrock._signing.SigV4``), and a stream's binary frames are cut with the same
event-stream decoder: the cost every Bedrock client pays, so the ratio shows what the library adds.
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
from ..canned import (
    ANTHROPIC_MODEL,
    API_KEY,
    BEDROCK_KEYS,
    BEDROCK_MODEL,
    BEDROCK_REGION,
    GEMINI_MODEL,
    LOOP_SIZES,
    OPENAI_MODEL,
    PROMPT,
    S2_PROMPT,
    S3_PROMPT,
    S7_PROMPT,
    raw_tool_specs,
)

Call = tuple[str, str, dict[str, Any]]


class Wire:
    """What differs between the wire formats for a hand-built client."""

    sign: Callable[[Any], None] | None = None
    """Signs a built request in place (Bedrock's SigV4); ``None``: the headers authenticate."""

    def __init__(self, wire: str, base_url: str) -> None:
        self.openai = wire == "openai"
        self._tools: dict[str, list[dict[str, Any]]] = {}
        if self.openai:
            self.url = f"{base_url}/chat/completions"
            self.headers = {"authorization": f"Bearer {API_KEY}", "content-type": "application/json"}
        else:
            self.url = f"{base_url}/v1/messages"
            self.headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
        self.stream_url = self.url

    def body(self, messages: list[Any], scenario: str | None = None, *, stream: bool = False) -> bytes:
        if self.openai:
            request: dict[str, Any] = {"model": OPENAI_MODEL, "messages": messages}
            if scenario:
                request["tools"] = self.tools(scenario)
        else:
            request = {"model": ANTHROPIC_MODEL, "max_tokens": 1024, "messages": messages}
            if scenario:
                request["tools"] = self.tools(scenario)
        if stream:
            request["stream"] = True
        return json.dumps(request, separators=(",", ":")).encode()

    def tools(self, scenario: str) -> list[dict[str, Any]]:
        """The scenario's tool definitions in wire form, built on first use: hand-written code holds
        its definitions as constants, so the floor does not rebuild them per request."""
        tools = self._tools.get(scenario)
        if tools is None:
            if self.openai:
                tools = [
                    {"type": "function", "function": {"name": n, "description": d, "parameters": s}}
                    for n, d, s in raw_tool_specs(scenario)
                ]
            else:
                tools = [{"name": n, "description": d, "input_schema": s} for n, d, s in raw_tool_specs(scenario)]
            self._tools[scenario] = tools
        return tools

    def user(self, text: str) -> list[Any]:
        return [{"role": "user", "content": text}]

    def parse(self, data: dict[str, Any]) -> tuple[str | None, list[Call], Any]:
        """(text, tool calls, the assistant message to send back)."""
        if self.openai:
            message = data["choices"][0]["message"]
            calls = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                for c in message.get("tool_calls") or ()
            ]
            return message.get("content"), calls, message
        content = data["content"]
        text = "".join(b["text"] for b in content if b["type"] == "text") or None
        calls = [(b["id"], b["name"], b["input"]) for b in content if b["type"] == "tool_use"]
        return text, calls, {"role": "assistant", "content": content}

    def results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        if self.openai:
            return [
                {"role": "tool", "tool_call_id": c[0], "content": out} for c, out in zip(calls, outputs, strict=True)
            ]
        blocks = [
            {"type": "tool_result", "tool_use_id": c[0], "content": out} for c, out in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "content": blocks}]

    def delta(self, event: dict[str, Any]) -> str | None:
        if self.openai:
            choices = event.get("choices")
            return choices[0]["delta"].get("content") if choices else None
        if event.get("type") == "content_block_delta" and event["delta"]["type"] == "text_delta":
            return str(event["delta"]["text"])
        return None


class GeminiWire(Wire):
    """Gemini's ``generateContent``: the model and the mode in the URL, ``contents`` of parts, the
    model's turn sent back as it came (its thought signatures with it)."""

    def __init__(self, base_url: str) -> None:
        self.openai = False
        self._tools = {}
        self.url = f"{base_url}/models/{GEMINI_MODEL}:generateContent"
        self.stream_url = f"{base_url}/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"
        self.headers = {"x-goog-api-key": API_KEY, "content-type": "application/json"}

    def body(self, messages: list[Any], scenario: str | None = None, *, stream: bool = False) -> bytes:
        request: dict[str, Any] = {"contents": messages}
        if scenario:
            request["tools"] = self.tools(scenario)
        return json.dumps(request, separators=(",", ":")).encode()

    def tools(self, scenario: str) -> list[dict[str, Any]]:
        tools = self._tools.get(scenario)
        if tools is None:
            declarations = [
                {"name": n, "description": d, "parametersJsonSchema": s} for n, d, s in raw_tool_specs(scenario)
            ]
            tools = self._tools[scenario] = [{"functionDeclarations": declarations}]
        return tools

    def user(self, text: str) -> list[Any]:
        return [{"role": "user", "parts": [{"text": text}]}]

    def parse(self, data: dict[str, Any]) -> tuple[str | None, list[Call], Any]:
        content = data["candidates"][0]["content"]
        parts = content.get("parts") or []
        text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) or None
        calls = [(str(i), p["functionCall"]["name"], p["functionCall"].get("args") or {})
                 for i, p in enumerate(parts) if "functionCall" in p]  # fmt: skip
        return text, calls, content

    def results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        parts = [
            {"functionResponse": {"name": c[1], "response": {"output": out}}}
            for c, out in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "parts": parts}]

    def delta(self, event: dict[str, Any]) -> str | None:
        parts = event["candidates"][0]["content"].get("parts") or ()
        return "".join(p.get("text", "") for p in parts if not p.get("thought")) or None


class BedrockWire(Wire):
    """Bedrock's ``Converse``: the model and the mode in the URL, every request signed (SigV4), blocks
    of content, the tools in ``toolConfig``, a call's ``toolUseId`` sent back with its result."""

    def __init__(self, base_url: str) -> None:
        from providers.bedrock._signing import SigV4

        self.openai = False
        self._tools = {}
        model = BEDROCK_MODEL.replace(":", "%3A")
        self.url = f"{base_url}/model/{model}/converse"
        self.stream_url = f"{base_url}/model/{model}/converse-stream"
        self.headers = {"content-type": "application/json"}
        self.sign = SigV4(BEDROCK_REGION, **BEDROCK_KEYS).sign

    def body(self, messages: list[Any], scenario: str | None = None, *, stream: bool = False) -> bytes:
        request: dict[str, Any] = {"messages": messages}
        if scenario:
            request["toolConfig"] = {"tools": self.tools(scenario)}
        return json.dumps(request, separators=(",", ":")).encode()

    def tools(self, scenario: str) -> list[dict[str, Any]]:
        tools = self._tools.get(scenario)
        if tools is None:
            tools = self._tools[scenario] = [
                {"toolSpec": {"name": n, "description": d, "inputSchema": {"json": s}}}
                for n, d, s in raw_tool_specs(scenario)
            ]
        return tools

    def user(self, text: str) -> list[Any]:
        return [{"role": "user", "content": [{"text": text}]}]

    def parse(self, data: dict[str, Any]) -> tuple[str | None, list[Call], Any]:
        message = data["output"]["message"]
        content = message["content"]
        text = "".join(b["text"] for b in content if "text" in b) or None
        calls = [(b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
                 for b in content if "toolUse" in b]  # fmt: skip
        return text, calls, message

    def results(self, calls: list[Call], outputs: list[str]) -> list[Any]:
        # with its status, as the recorded client (pydantic-ai, over botocore) sends it
        blocks = [
            {"toolResult": {"toolUseId": c[0], "content": [{"text": out}], "status": "success"}}
            for c, out in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "content": blocks}]

    def delta(self, event: dict[str, Any]) -> str | None:
        text = event.get("delta", {}).get("text")
        return str(text) if text else None


def _wire(wire: str, base_url: str) -> Wire:
    if wire == "gemini":
        return GeminiWire(base_url)
    return BedrockWire(base_url) if wire == "bedrock" else Wire(wire, base_url)


class RawAdapter:
    label = "raw httpx2"

    def __init__(self, wire: str, backend: Backend) -> None:
        self.w = _wire(wire, backend.base_url)
        self.client = backend.sync_client()
        self.aclient = backend.async_client()
        self.pool = ThreadPoolExecutor(max_workers=8)
        self.store: dict[str, str] = {}
        self.tools: dict[str, Callable[..., Any]] = {"get_weather": tools.get_weather, "book_flight": tools.book_flight}
        self.tools.update({name: fn for name, _, fn in tools.forecast_tools()})
        self.tools.update({name: fn for name, _, fn in tools.loop_tools(max(LOOP_SIZES))})

    def _signed(self, client: Any, url: str, body: bytes) -> Any:
        request = client.build_request("POST", url, content=body, headers=self.w.headers)
        self.w.sign(request)  # type: ignore[misc]
        return request

    def _post(self, body: bytes) -> dict[str, Any]:
        if self.w.sign is None:
            response = self.client.post(self.w.url, content=body, headers=self.w.headers)
        else:
            response = self.client.send(self._signed(self.client, self.w.url, body))
        response.raise_for_status()
        return json.loads(response.content)  # type: ignore[no-any-return]

    async def _apost(self, body: bytes) -> dict[str, Any]:
        if self.w.sign is None:
            response = await self.aclient.post(self.w.url, content=body, headers=self.w.headers)
        else:
            response = await self.aclient.send(self._signed(self.aclient, self.w.url, body))
        response.raise_for_status()
        return json.loads(response.content)  # type: ignore[no-any-return]

    # S1
    def call(self) -> str | None:
        return self.w.parse(self._post(self.w.body(self.w.user(PROMPT))))[0]

    async def acall(self) -> str | None:
        return self.w.parse(await self._apost(self.w.body(self.w.user(PROMPT))))[0]

    # S2 / S3 / S7: the loop
    def _loop(self, scenario: str, prompt: str, run: Callable[[list[Call]], list[str]]) -> str | None:
        messages = self.w.user(prompt)
        while True:
            text, calls, assistant = self.w.parse(self._post(self.w.body(messages, scenario)))
            if not calls:
                return text
            messages = [*messages, assistant, *self.w.results(calls, run(calls))]

    async def _aloop(self, scenario: str, prompt: str, run: Callable[[list[Call]], Any]) -> str | None:
        messages = self.w.user(prompt)
        while True:
            text, calls, assistant = self.w.parse(await self._apost(self.w.body(messages, scenario)))
            if not calls:
                return text
            messages = [*messages, assistant, *self.w.results(calls, await run(calls))]

    def _run_sync(self, calls: list[Call]) -> list[str]:
        return [self.tools[name](**args) for _, name, args in calls]

    async def _run_async(self, calls: list[Call]) -> list[str]:
        return [self.tools[name](**args) for _, name, args in calls]

    def tool_loop(self) -> str | None:
        return self._loop("s2", S2_PROMPT, self._run_sync)

    async def atool_loop(self) -> str | None:
        return await self._aloop("s2", S2_PROMPT, self._run_async)

    def s3_blocking(self) -> str | None:
        def run(calls: list[Call]) -> list[str]:
            return list(self.pool.map(lambda c: tools.lookup_blocking(**c[2]), calls))

        return self._loop("s3", S3_PROMPT, run)

    async def as3_async(self) -> str | None:
        async def run(calls: list[Call]) -> list[str]:
            return list(await asyncio.gather(*(tools.lookup_async(**c[2]) for c in calls)))

        return await self._aloop("s3", S3_PROMPT, run)

    # S4
    def stream(self) -> Iterator[str]:
        if self.w.sign is not None:
            yield from self._frames()
            return
        with self.client.stream("POST", self.w.stream_url, content=self.w.body(self.w.user(PROMPT), stream=True),
                                headers=self.w.headers) as response:  # fmt: skip
            for line in response.iter_lines():
                if line.startswith("data: "):
                    data = line[6:]
                    if data == "[DONE]":
                        break
                    text = self.w.delta(json.loads(data))
                    if text:
                        yield text

    async def astream(self) -> AsyncIterator[str]:
        body = self.w.body(self.w.user(PROMPT), stream=True)
        if self.w.sign is not None:
            async for text in self._aframes(body):
                yield text
            return
        async with self.aclient.stream("POST", self.w.stream_url, content=body, headers=self.w.headers) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    data = line[6:]
                    if data == "[DONE]":
                        break
                    text = self.w.delta(json.loads(data))
                    if text:
                        yield text

    def _frames(self) -> Iterator[str]:
        """Bedrock's stream: binary frames cut by the event-stream decoder, each payload ``json.loads``."""
        from providers.bedrock._eventstream import EventStreamDecoder

        decoder = EventStreamDecoder("raw")
        request = self._signed(self.client, self.w.stream_url, self.w.body(self.w.user(PROMPT), stream=True))
        response = self.client.send(request, stream=True)
        try:
            for chunk in response.iter_bytes():
                for message in decoder.feed(chunk):
                    if message.headers[":event-type"] == "contentBlockDelta":
                        text = self.w.delta(json.loads(message.payload))
                        if text:
                            yield text
        finally:
            response.close()

    async def _aframes(self, body: bytes) -> AsyncIterator[str]:
        from providers.bedrock._eventstream import EventStreamDecoder

        decoder = EventStreamDecoder("raw")
        response = await self.aclient.send(self._signed(self.aclient, self.w.stream_url, body), stream=True)
        try:
            async for chunk in response.aiter_bytes():
                for message in decoder.feed(chunk):
                    if message.headers[":event-type"] == "contentBlockDelta":
                        text = self.w.delta(json.loads(message.payload))
                        if text:
                            yield text
        finally:
            await response.aclose()

    # S7
    async def aconfirm_round_trip(self) -> str | None:
        """Pause on the gated call, keep the conversation in a store, take it back, allow, resume."""
        messages = self.w.user(S7_PROMPT)
        _, calls, assistant = self.w.parse(await self._apost(self.w.body(messages, "s7confirm")))
        state_id = secrets.token_urlsafe(24)
        self.store[state_id] = json.dumps({"messages": [*messages, assistant], "calls": calls})
        state = json.loads(self.store.pop(state_id))
        calls = [tuple(c) for c in state["calls"]]
        outputs = [self.tools[name](**args) for _, name, args in calls]
        messages = [*state["messages"], *self.w.results(calls, outputs)]
        return self.w.parse(await self._apost(self.w.body(messages, "s7confirm")))[0]

    async def atools50_loop(self) -> str | None:
        return await self._aloop("s7tools50", S2_PROMPT, self._run_async)

    # S8a: one call offering n tools, answered with text (0 tools is S1's call)
    def _call_tools(self, n: int) -> str | None:
        return self.w.parse(self._post(self.w.body(self.w.user(PROMPT), f"catalog{n}")))[0]

    async def _acall_tools(self, n: int) -> str | None:
        return self.w.parse(await self._apost(self.w.body(self.w.user(PROMPT), f"catalog{n}")))[0]

    def call_tools50(self) -> str | None:
        return self._call_tools(50)

    async def acall_tools50(self) -> str | None:
        return await self._acall_tools(50)

    def call_tools200(self) -> str | None:
        return self._call_tools(200)

    async def acall_tools200(self) -> str | None:
        return await self._acall_tools(200)

    # S8b: the 5-round loop offering n tools on every round
    def loop5_tools1(self) -> str | None:
        return self._loop("loop1", S2_PROMPT, self._run_sync)

    async def aloop5_tools1(self) -> str | None:
        return await self._aloop("loop1", S2_PROMPT, self._run_async)

    def loop5_tools50(self) -> str | None:
        return self._loop("loop50", S2_PROMPT, self._run_sync)

    async def aloop5_tools50(self) -> str | None:
        return await self._aloop("loop50", S2_PROMPT, self._run_async)
