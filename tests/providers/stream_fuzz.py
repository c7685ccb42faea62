"""The recorded streams of every provider, served in chunks a test chooses, for the property tests of
``test_stream_fuzz``: one :class:`Stream` per recording, one line per provider in :data:`STREAMS`.

A stream is served through the provider's real model and transport (``httpx2.MockTransport``), so
each test reaches every layer a reply goes through: the body's bytes, the SSE, NDJSON or binary
event-stream decoding, the provider's stream parser and the shell that assembles the reply.

A test edits a body through its :class:`Stream` (``payloads``, ``splice``, ``boundaries``), never
by its framing: an edit inside an event's JSON keeps the frame around it valid (a binary frame gets
its lengths and checksums again), an edit anywhere else is damage to the framing itself.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
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
from providers.bedrock import BedrockChatModel
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


def _bedrock(host: str | None, **kwargs: Any) -> ChatModel:
    if host:
        kwargs["base_url"] = host
    return BedrockChatModel("us.amazon.nova-micro-v1:0", region="us-east-1", aws_access_key_id="AKIDEXAMPLE",
                            aws_secret_access_key="s", retry=NO_RETRY, **kwargs)  # fmt: skip


_CONTENT_TYPES = {"sse": "text/event-stream", "ndjson": "application/x-ndjson",
                  "eventstream": "application/vnd.amazon.eventstream"}  # fmt: skip


def _recorded_body(response: dict[str, Any]) -> bytes:
    if "eventstream_base64" in response:
        return base64.b64decode(response["eventstream_base64"])
    return str(response.get("sse") or response.get("ndjson") or "").encode()


def frames(body: bytes) -> list[tuple[int, int, int]]:
    """``(start, payload start, end)`` of each whole AWS event-stream message in ``body``."""
    found, at = [], 0
    while at + 12 <= len(body):
        total, headers = struct.unpack(">II", body[at : at + 8])
        if total < 16 or at + total > len(body):
            break
        found.append((at, at + 12 + headers, at + total))
        at += total
    return found


def reframed(message: bytes, payload_start: int, payload: bytes) -> bytes:
    """One event-stream message with another payload: its headers kept, lengths and CRCs redone."""
    headers = message[12:payload_start]
    prelude = struct.pack(">II", 16 + len(headers) + len(payload), len(headers))
    out = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return out + struct.pack(">I", zlib.crc32(out))


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
    def framing(self) -> str:
        """``"sse"``, ``"ndjson"`` or ``"eventstream"`` (AWS's binary framing)."""
        response = self.response
        return "eventstream" if "eventstream_base64" in response else "ndjson" if "ndjson" in response else "sse"

    @property
    def ndjson(self) -> bool:
        return self.framing == "ndjson"

    @property
    def binary(self) -> bool:
        return self.framing == "eventstream"

    @property
    def content_type(self) -> str:
        return _CONTENT_TYPES[self.framing]

    @property
    def response(self) -> dict[str, Any]:
        found: dict[str, Any] = interactions(self.provider, self.name)[self.index]["response"]
        return found

    @property
    def body(self) -> bytes:
        return _recorded_body(self.response)

    @property
    def follow_up(self) -> bytes | None:
        """The next recorded stream of the file (the answer after the tool results), if any."""
        recorded = interactions(self.provider, self.name)
        if len(recorded) <= self.index + 1:
            return None
        return _recorded_body(recorded[self.index + 1]["response"]) or None

    def terminal_offset(self, body: bytes) -> int:
        """Where the terminal event begins in ``body``: the line that starts it, or its frame."""
        found = re.search(self.terminal.encode(), body)
        assert found is not None, f"{self.id}: no terminal event matching {self.terminal!r}"
        if self.binary:
            return next(start for start, _, end in frames(body) if start <= found.start() < end)
        return body.rfind(b"\n", 0, found.start()) + 1

    @property
    def keepalive(self) -> bytes:
        """What the server sends to keep an idle stream open: nothing in the binary framing, which
        has no keep-alive (an idle Bedrock stream is a stalled server)."""
        return b"" if self.binary else b"\n" if self.ndjson else b": keep-alive\n\n"

    def payloads(self, body: bytes) -> list[tuple[int, int]]:
        """``(start, end)`` of each event's JSON payload in ``body``."""
        if self.binary:
            return [(payload, end - 4) for _, payload, end in frames(body)]
        pattern = rb"(?m)^(\{.*)$" if self.ndjson else rb"(?m)^data: ?(\{.*)$"
        return [(m.start(1), m.end(1)) for m in re.finditer(pattern, body)]

    def boundaries(self, body: bytes) -> list[int]:
        """The offsets between two events (and the start), where whole garbage lines or bytes go."""
        if self.binary:
            return [start for start, _, _ in frames(body)] + [len(body)]
        boundary = rb"\n" if self.ndjson else rb"\n\n"
        return [0, *(m.end() for m in re.finditer(boundary, body))]

    def garbage(self, line: bytes) -> bytes:
        """``line`` as inserted between two events: a line of its own, or raw bytes between frames."""
        return line if self.binary else line + (b"\n" if self.ndjson else b"\n\n")

    def splice(self, body: bytes, start: int, end: int, new: bytes) -> bytes:
        """``body[start:end]`` replaced by ``new``. Inside one binary frame's payload the frame is
        rebuilt around it (the JSON is damaged, not the framing); anywhere else the bytes are."""
        if self.binary:
            for first, payload, last in frames(body):
                if payload <= start <= end <= last - 4:
                    changed = body[payload:start] + new + body[end : last - 4]
                    return body[:first] + reframed(body[first:last], payload - first, changed) + body[last:]
        return body[:start] + new + body[end:]


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
    Stream("bedrock", "d_stream_text", _bedrock, r"messageStop"),
    Stream("bedrock", "d_stream_tool_use_roundtrip", _bedrock, r"messageStop"),
    Stream("bedrock", "d_stream_reasoning", _bedrock, r"messageStop"),
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
        kind = self.stream.content_type
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
_TEXT_KEYS = frozenset({"delta", "arguments", "partial_json", "thinking", "refusal", "input"})


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


def with_multibyte_text(stream: Stream, body: bytes) -> bytes:
    """The stream with multi-byte characters in its texts and arguments (the recordings are ASCII):
    the same events, each JSON re-written with its text widened, so a cut can fall inside a character."""
    for start, end in reversed(stream.payloads(body)):
        widened = json.dumps(_widen(json.loads(body[start:end])), ensure_ascii=False, separators=(",", ":"))
        body = stream.splice(body, start, end, widened.encode())
    return body


def with_crlf(stream: Stream, body: bytes) -> bytes:
    """The same stream with ``\\r\\n`` line ends (allowed by SSE, and by NDJSON readers; a binary
    framing has no lines)."""
    return body if stream.binary else body.replace(b"\n", b"\r\n")


def interesting_cuts(stream: Stream, body: bytes) -> list[int]:
    """Offsets a random cut rarely hits: inside a UTF-8 character, between ``\\r`` and ``\\n``, and
    inside every ``data:`` (and ``event:``) field name; in a binary framing, inside every frame's
    prelude and headers."""
    cuts: list[int] = []
    if stream.binary:
        cuts += [i for start, payload, _ in frames(body) for i in range(start + 1, payload + 1)]
    for i, byte in enumerate(body):
        inside_a_character = 0x80 <= byte < 0xC0  # a continuation byte
        between_cr_and_lf = byte == 0x0A and i > 0 and body[i - 1] == 0x0D
        if inside_a_character or between_cr_and_lf:
            cuts.append(i)
    for found in re.finditer(rb"(?m)^(data|event):", body):
        cuts.extend(range(found.start() + 1, found.end() + 1))
    return cuts
