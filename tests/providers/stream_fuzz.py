"""The recorded streams of every provider, served in chunks a test chooses, for the property tests of
``test_stream_fuzz``: one :class:`Stream` per recording, one line per provider in :data:`STREAMS`.

A stream is served through the provider's real model and transport (``httpx2.MockTransport``), so
each test reaches every layer a reply goes through: the body's bytes, the SSE or NDJSON decoding,
the provider's stream parser and the shell that assembles the reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from chatclient._sync import run_sync
from chatclient.model import ChatModel
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.gemini import GeminiChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .fixtures import interactions
from .model_events import assemble

NO_RETRY = RetryPolicy(max_retries=0, initial_backoff=0)

Factory = Callable[..., ChatModel]
"""``(host, **model arguments)`` -> the model; ``host`` is ``None`` for the provider's own (the mock
transport answers whatever the URL), or a loopback server's ``http://127.0.0.1:port``."""


def _openai(host: str | None, **kwargs: Any) -> ChatModel:
    base = f"{host or 'https://api.openai.com'}/v1"
    return OpenAIChatModel("gpt-4o", base_url=base, api_key="k", retry=NO_RETRY, **kwargs)


def _ollama_compat(host: str | None, **kwargs: Any) -> ChatModel:
    base = f"{host or 'http://localhost:11434'}/v1"
    return OpenAIChatModel("llama3.1", base_url=base, api_key="k", retry=NO_RETRY, **kwargs)


def _anthropic(host: str | None, **kwargs: Any) -> ChatModel:
    if host:
        kwargs["base_url"] = host
    return AnthropicChatModel("claude-sonnet-4-5", api_key="k", retry=NO_RETRY, **kwargs)


def _responses(host: str | None, **kwargs: Any) -> ChatModel:
    base = f"{host or 'https://api.openai.com'}/v1"
    return OpenAIResponsesChatModel("gpt-4o", base_url=base, api_key="k", retry=NO_RETRY, **kwargs)


def _ollama(host: str | None, **kwargs: Any) -> ChatModel:
    return OllamaChatModel("llama3.1", base_url=host or "http://localhost:11434", retry=NO_RETRY, **kwargs)


def _gemini(host: str | None, **kwargs: Any) -> ChatModel:
    if host:
        kwargs["base_url"] = host
    return GeminiChatModel("gemini-2.5-flash", api_key="k", retry=NO_RETRY, **kwargs)


@dataclass(frozen=True)
class Stream:
    """One recorded stream: where it is, the model that reads it, and where its terminal event
    starts (``terminal``: a regular expression for the first line of the event that completes the
    stream; a body cut before that line is incomplete)."""

    provider: str
    name: str
    model: Factory
    terminal: str
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def ndjson(self) -> bool:
        return "ndjson" in self.response

    @property
    def response(self) -> dict[str, Any]:
        found: dict[str, Any] = interactions(self.provider, self.name)[self.index]["response"]
        return found

    @property
    def body(self) -> bytes:
        return str(self.response["ndjson" if self.ndjson else "sse"]).encode()

    @property
    def follow_up(self) -> bytes | None:
        """The next recorded stream of the file (the answer after the tool results), if any."""
        recorded = interactions(self.provider, self.name)
        if len(recorded) <= self.index + 1:
            return None
        following = recorded[self.index + 1]["response"]
        return str(following.get("sse") or following.get("ndjson") or "").encode() or None

    def terminal_offset(self, body: bytes) -> int:
        """Where the line that starts the terminal event begins in ``body``."""
        found = re.search(self.terminal.encode(), body)
        assert found is not None, f"{self.id}: no terminal event matching {self.terminal!r}"
        return body.rfind(b"\n", 0, found.start()) + 1


STREAMS: list[Stream] = [
    Stream("openai-chat", "d_stream_text_with_usage", _openai, r'"finish_reason":\s*"'),
    Stream("openai-chat", "d_stream_parallel_tool_call_deltas", _openai, r'"finish_reason":\s*"'),
    Stream("anthropic", "d_stream_text", _anthropic, r"event: message_stop"),
    Stream("anthropic", "d_stream_parallel_tool_use_input_json_delta", _anthropic, r"event: message_stop"),
    Stream("openai-responses", "d_stream_text", _responses, r"event: response\.completed"),
    Stream("openai-responses", "d_stream_parallel_function_call_deltas", _responses, r"event: response\.completed"),
    Stream("ollama", "native_d_stream_ndjson", _ollama, r'"done":\s*true'),
    Stream("ollama", "openai_compat_d_stream_tool_call", _ollama_compat, r'"finish_reason":\s*"'),
    Stream("gemini", "d_stream_text", _gemini, r'"finishReason":\s*"'),
    Stream("gemini", "d_stream_parallel_function_calls_roundtrip", _gemini, r'"finishReason":\s*"'),
    Stream("gemini", "h_thinking_stream", _gemini, r'"finishReason":\s*"'),
]
"""Every recorded stream, one line each: a new provider's parser is one more line here."""

TOOL_STREAMS = [s for s in STREAMS if "tool" in s.name or "function" in s.name]


class Chunks(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """A body handed over in the given pieces, to a sync or an async reader."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = list(pieces)

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def pieces(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    """``body`` cut at each offset of ``cuts`` (any order, repeats allowed)."""
    points = sorted({c for c in cuts if 0 < c < len(body)})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


@dataclass
class Server:
    """Serves ``first`` (in its pieces) to the first request and the stream's follow-up to the rest."""

    stream: Stream
    first: list[bytes]
    requests: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        self.sent.append(json.loads(request.content))
        kind = "application/x-ndjson" if self.stream.ndjson else "text/event-stream"
        if self.requests == 1:
            body: Sequence[bytes] = self.first
        else:
            body = [self.stream.follow_up or b""]
        return httpx2.Response(200, headers={"content-type": kind}, stream=Chunks(body))

    def model(self) -> ChatModel:
        transport = httpx2.MockTransport(self.handle)
        clients = {"http_client": httpx2.Client(transport=transport),
                   "async_http_client": httpx2.AsyncClient(transport=transport)}  # fmt: skip
        return self.stream.model(None, **clients)


def streamed_reply(stream: Stream, body_pieces: Sequence[bytes], *, use_async: bool = False) -> ChatResponse:
    """The reply the model assembles from the pieces, as the chain would."""
    model = Server(stream, list(body_pieces)).model()
    prompt = Prompt("hi")
    if not use_async:
        return assemble(list(model.stream(prompt)))

    async def collect() -> ChatResponse:
        return assemble([event async for event in model.astream(prompt)])

    return run_sync(collect)


def comparable(response: ChatResponse) -> Any:
    """What two readings of the same bytes must agree on: the whole reply, as data."""
    return response.model_dump(mode="json")


# ------------------------------------------------------------------------------ transformations


_MULTIBYTE = str.maketrans({"o": "ö", "i": "ï", "c": "ç", "d": "\U0001d4b9"})
"""Letters that appear in no JSON literal (``true``, ``false``, ``null``, exponents), each to a
character of 2, 3 or 4 bytes in UTF-8."""
_PROSE = str.maketrans({**{ord(c): m for c, m in zip("0123456789", "٠١٢٣٤٥٦٧٨٩", strict=True)}, ord("e"): "é"})
"""For prose only (never JSON text): digits and ``e`` too (one recorded answer is all digits)."""
_PROSE_KEYS = frozenset({"content", "text"})
_TEXT_KEYS = frozenset({"delta", "arguments", "partial_json", "thinking", "refusal"})


def _widened(key: str, value: Any) -> Any:
    if isinstance(value, str) and key in _PROSE_KEYS:
        return value.translate(_MULTIBYTE).translate(_PROSE)
    if isinstance(value, str) and key in _TEXT_KEYS:
        return value.translate(_MULTIBYTE)
    return _widen(value)


def _widen(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _widened(key, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_widen(item) for item in value]
    return value


def with_multibyte_text(body: bytes, ndjson: bool) -> bytes:
    """The stream with multi-byte characters in its texts and arguments (the recordings are ASCII):
    the same events, each JSON re-written with its text widened, so a cut can fall inside a character."""
    out: list[str] = []
    for line in body.decode().split("\n"):
        prefix = "" if ndjson else "data: "
        payload = line[len(prefix) :] if line.startswith(prefix) else None
        if payload and payload.lstrip().startswith("{"):
            line = prefix + json.dumps(_widen(json.loads(payload)), ensure_ascii=False, separators=(",", ":"))
        out.append(line)
    return "\n".join(out).encode()


def with_crlf(body: bytes) -> bytes:
    """The same stream with ``\\r\\n`` line ends (allowed by SSE, and by NDJSON readers)."""
    return body.replace(b"\n", b"\r\n")


def interesting_cuts(body: bytes) -> list[int]:
    """Offsets a random cut rarely hits: inside a UTF-8 character, between ``\\r`` and ``\\n``, and
    inside every ``data:`` (and ``event:``) field name."""
    cuts: list[int] = []
    for i, byte in enumerate(body):
        inside_a_character = 0x80 <= byte < 0xC0  # a continuation byte
        between_cr_and_lf = byte == 0x0A and i > 0 and body[i - 1] == 0x0D
        if inside_a_character or between_cr_and_lf:
            cuts.append(i)
    for found in re.finditer(rb"(?m)^(data|event):", body):
        cuts.extend(range(found.start() + 1, found.end() + 1))
    return cuts
