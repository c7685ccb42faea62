"""S1, S2 and S4 on the Bedrock Converse wire: chatclient's ``BedrockChatModel`` against raw httpx2
(hand-built JSON, the same SigV4 signer, POST, parse): ``python -m benchmarks.bedrock [--quick]``.

Apart from ``run.py`` so that the Bedrock wire needs nothing of the shared canned traffic: its
replies are Converse's (shapes as recorded by pydantic-ai from the real API), written here. Both
sides sign every request with botocore's SigV4 signer (``providers.bedrock._signing.SigV4``), so
the ratio shows what the library adds, not the signature (about 75 µs of each request, measured by
``--sign-only``).

- S1: one call, text reply, sync and async, through an in-process ``httpx2.MockTransport``.
- S2: one tool round (a ``toolUse`` reply, the tool, the final answer), sync and async.
- S4: a 500-delta ``ConverseStream`` reply (AWS event-stream framing, one frame per delta) over a
  loopback HTTP server (a thread of this process: read the ratio, both sides share it); raw decodes
  the frames with the same decoder (``EventStreamDecoder``: the floor any client must pay) and
  ``json.loads`` each payload.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import httpx2

from chatclient import ChatClient
from chatclient.tools import tool
from providers.bedrock import BedrockChatModel
from providers.bedrock._eventstream import EventStreamDecoder, encode_event
from providers.bedrock._signing import SigV4

from .canned import FINAL, PROMPT, S2_PROMPT, STREAM_DELTAS, STREAM_TEXT, TEXT, weather_text
from .harness import TIMES, Series, Table, fmt_ms, fmt_ratio, fmt_us, measure

MODEL = "us.amazon.nova-micro-v1:0"
REGION = "us-east-1"
KEYS = {"access_key": "AKIDEXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
BASE = f"https://bedrock-runtime.{REGION}.amazonaws.com"
PATH = "/model/us.amazon.nova-micro-v1%3A0/converse"
TOOL_USE_ID = "tooluse_lAG_zP8QRHmSYOwZzzaCqA"
_USAGE = {"inputTokens": 13, "outputTokens": 82, "totalTokens": 95}


def _reply(content: list[dict[str, Any]], stop: str) -> bytes:
    body = {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
            "usage": _USAGE, "metrics": {"latencyMs": 391}}  # fmt: skip
    return json.dumps(body).encode()


TEXT_REPLY = _reply([{"text": TEXT}], "end_turn")
FINAL_REPLY = _reply([{"text": FINAL}], "end_turn")
CALL_REPLY = _reply(
    [{"toolUse": {"toolUseId": TOOL_USE_ID, "name": "get_weather", "input": {"city": "Paris"}}}], "tool_use"
)


def _stream(n: int = STREAM_DELTAS) -> bytes:
    frames = [encode_event("messageStart", b'{"p":"abcdefghijklmnopqr","role":"assistant"}')]
    for i in range(n):
        delta = {"contentBlockIndex": 0, "delta": {"text": f"w{i} "}, "p": "abcdefghijklmn"}
        frames.append(encode_event("contentBlockDelta", json.dumps(delta, separators=(",", ":")).encode()))
    frames.append(encode_event("contentBlockStop", b'{"contentBlockIndex":0,"p":"abcdefghij"}'))
    frames.append(encode_event("messageStop", b'{"p":"abcdefgh","stopReason":"end_turn"}'))
    metadata = {"metrics": {"latencyMs": 391}, "usage": _USAGE}
    frames.append(encode_event("metadata", json.dumps(metadata).encode()))
    return b"".join(frames)


STREAM = _stream()
_JSON = {"content-type": "application/json", "x-amzn-requestid": "b3f4c2d1-0000-4000-8000-000000000000"}


def route(request: httpx2.Request) -> httpx2.Response:
    """The final answer once a tool result is sent; a tool call when tools are offered; else text."""
    body = request.content
    if b'"toolResult"' in body:
        return httpx2.Response(200, headers=_JSON, content=FINAL_REPLY)
    if b'"toolConfig"' in body:
        return httpx2.Response(200, headers=_JSON, content=CALL_REPLY)
    return httpx2.Response(200, headers=_JSON, content=TEXT_REPLY)


# ------------------------------------------------------------------------------------------- raw


class Raw:
    """What a hand-written client does: build the JSON, sign it, POST it, read the answer."""

    def __init__(self, client: httpx2.Client, aclient: httpx2.AsyncClient, base: str = BASE) -> None:
        self.client, self.aclient, self.base = client, aclient, base
        self.signer = SigV4(REGION, **KEYS)
        self.tools = [{"toolSpec": {"name": "get_weather", "description": "Get the current weather of a city.",
                       "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                                                "required": ["city"]}}}}]  # fmt: skip

    def _request(self, client: Any, body: dict[str, Any], stream: bool = False) -> httpx2.Request:
        path = PATH + ("-stream" if stream else "")
        request: httpx2.Request = client.build_request(
            "POST", self.base + path, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )
        self.signer.sign(request)
        return request

    @staticmethod
    def _user(text: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"text": text}]}

    def call(self) -> str:
        reply = self.client.send(self._request(self.client, {"messages": [self._user(PROMPT)]})).json()
        return str(reply["output"]["message"]["content"][0]["text"])

    async def acall(self) -> str:
        response = await self.aclient.send(self._request(self.aclient, {"messages": [self._user(PROMPT)]}))
        return str(response.json()["output"]["message"]["content"][0]["text"])

    def _rounds(self) -> tuple[dict[str, Any], Any]:
        messages = [self._user(S2_PROMPT)]
        return {"messages": messages, "toolConfig": {"tools": self.tools}}, messages

    def _then(self, messages: list[dict[str, Any]], reply: dict[str, Any]) -> dict[str, Any]:
        message = reply["output"]["message"]
        use = message["content"][0]["toolUse"]
        result = {"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": weather_text(**use["input"])}]}}
        messages += [message, {"role": "user", "content": [result]}]
        return {"messages": messages, "toolConfig": {"tools": self.tools}}

    def tool_loop(self) -> str:
        body, messages = self._rounds()
        first = self.client.send(self._request(self.client, body)).json()
        final = self.client.send(self._request(self.client, self._then(messages, first))).json()
        return str(final["output"]["message"]["content"][0]["text"])

    async def atool_loop(self) -> str:
        body, messages = self._rounds()
        first = (await self.aclient.send(self._request(self.aclient, body))).json()
        final = (await self.aclient.send(self._request(self.aclient, self._then(messages, first)))).json()
        return str(final["output"]["message"]["content"][0]["text"])

    def stream(self) -> str:
        decoder, texts = EventStreamDecoder("raw"), []
        request = self._request(self.client, {"messages": [self._user(PROMPT)]}, stream=True)
        response = self.client.send(request, stream=True)
        try:
            for chunk in response.iter_bytes():
                for message in decoder.feed(chunk):
                    if message.headers[":event-type"] == "contentBlockDelta":
                        texts.append(json.loads(message.payload)["delta"]["text"])
        finally:
            response.close()
        return "".join(texts)

    async def astream(self) -> str:
        decoder, texts = EventStreamDecoder("raw"), []
        request = self._request(self.aclient, {"messages": [self._user(PROMPT)]}, stream=True)
        response = await self.aclient.send(request, stream=True)
        try:
            async for chunk in response.aiter_bytes():
                for message in decoder.feed(chunk):
                    if message.headers[":event-type"] == "contentBlockDelta":
                        texts.append(json.loads(message.payload)["delta"]["text"])
        finally:
            await response.aclose()
        return "".join(texts)


# ------------------------------------------------------------------------------------ chatclient


@tool
def get_weather(city: str) -> str:
    """Get the current weather of a city."""
    return weather_text(city)


class Ours:
    def __init__(self, client: httpx2.Client, aclient: httpx2.AsyncClient, base: str | None = None) -> None:
        model = BedrockChatModel(
            MODEL, region=REGION, base_url=base, http_client=client, async_http_client=aclient,
            aws_access_key_id=KEYS["access_key"], aws_secret_access_key=KEYS["secret_key"],
        )  # fmt: skip
        self.plain = ChatClient.create(model)
        self.weather = ChatClient.builder(model).default_tools(get_weather).build()

    def call(self) -> str | None:
        return self.plain.prompt(PROMPT).call().content()

    async def acall(self) -> str | None:
        return await self.plain.prompt(PROMPT).acall().content()

    def tool_loop(self) -> str | None:
        return self.weather.prompt(S2_PROMPT).call().content()

    async def atool_loop(self) -> str | None:
        return await self.weather.prompt(S2_PROMPT).acall().content()

    def stream(self) -> str:
        return "".join(self.plain.prompt(PROMPT).stream().content())

    async def astream(self) -> str:
        return "".join([piece async for piece in self.plain.prompt(PROMPT).astream().content()])


# -------------------------------------------------------------------------------------- running


def _expect(text: str) -> Any:
    """The check of one operation's ``(result, tool runs)``."""
    return lambda outcome: None if outcome[0] == text else f"expected {text[:40]!r}, got {str(outcome[0])[:40]!r}"


def _series(raw: Any, ours: Any, scenario: str, expected: str) -> list[Series]:
    out = []
    for lib, side in (("raw", raw), ("chatclient", ours)):
        for mode, name in (("sync", scenario), ("async", f"a{scenario}")):
            out.append(Series(lib, "bedrock", mode, getattr(side, name), mode == "async", _expect(expected)))
    return out


def _table(name: str, title: str, series: list[Series], fmt: Any) -> Table:
    table = Table(name, title, ["mode", "raw httpx2", "chatclient", f"{TIMES} raw"])
    for mode in ("sync", "async"):
        raw, ours = (next(s for s in series if s.lib == lib and s.mode == mode) for lib in ("raw", "chatclient"))
        ratio = ours.median() / raw.median() if raw.ok and ours.ok else None
        table.rows.append([mode, fmt(raw.median()) if raw.ok else raw.na or "n/a",
                           fmt(ours.median()) if ours.ok else ours.na or "n/a", fmt_ratio(ratio)])  # fmt: skip
    return table


def _sign_cost(n: int = 2000) -> float:
    signer, body = SigV4(REGION, **KEYS), json.dumps({"messages": [{"role": "user", "content": [{"text": PROMPT}]}]})
    signer.sign(httpx2.Request("POST", BASE + PATH, content=body.encode()))  # botocore's import
    started = time.perf_counter_ns()
    for _ in range(n):
        signer.sign(httpx2.Request("POST", BASE + PATH, content=body.encode(), headers={"content-type": "x"}))
    return (time.perf_counter_ns() - started) / n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sign-only", action="store_true")
    args = parser.parse_args(argv)
    print(f"SigV4 signature (botocore): {fmt_us(_sign_cost())} µs per request")
    if args.sign_only:
        return
    rounds, ops, seconds = (3, 300, 0.5) if args.quick else (7, 1000, 1.0)
    transport = httpx2.MockTransport(route)
    client, aclient = httpx2.Client(transport=transport), httpx2.AsyncClient(transport=transport)
    raw, ours = Raw(client, aclient), Ours(client, aclient)
    s1, s2 = _series(raw, ours, "call", TEXT), _series(raw, ours, "tool_loop", FINAL)
    measure(s1 + s2, rounds=rounds, ops=ops, seconds=seconds, warmup=50)
    tables = [_table("S1", "one call, µs", s1, fmt_us), _table("S2", "one tool round, µs", s2, fmt_us)]
    from chatclient.testing.fault_server import fault_server

    reply = httpx2.Response(200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=STREAM)
    with fault_server(reply) as server:
        base = f"{server.url}/whole"
        client, aclient = httpx2.Client(), httpx2.AsyncClient()
        s4 = _series(Raw(client, aclient, base), Ours(client, aclient, base), "stream", STREAM_TEXT)
        measure(s4, rounds=rounds, ops=max(ops // 20, 10), seconds=seconds, warmup=5)
    tables.append(_table("S4", f"a {STREAM_DELTAS}-delta stream over loopback, total ms", s4, fmt_ms))
    for table in tables:
        print(f"\n{table.scenario}: {table.title}")
        print(" | ".join(table.columns))
        for row in table.rows:
            print(" | ".join(row))


if __name__ == "__main__":
    main()
