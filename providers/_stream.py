"""Decoding streamed replies: SSE and NDJSON, into JSON payloads.

Whether a stream was complete is the provider's question (each API has its own last event), but
Chat Completions' terminal event is the ``[DONE]`` sentinel, which carries no JSON: so the SSE
reader skips it and notes that it came (:attr:`SseStream.saw_done`).

Both readers decode UTF-8 strictly: a byte that is not UTF-8 is a ``MalformedResponseError``, never
a replacement character slipped into a text or a tool call's arguments (where it would change what
the tool runs with). The bytes may come in any pieces: a piece may end inside a character, inside a
field name, or between the ``\\r`` and ``\\n`` of a line end. An NDJSON body that ends inside a line
was cut: ``StreamIncompleteError``.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import httpx2

from chatclient.errors import ChatClientError, MalformedResponseError, StreamIncompleteError

from ._errors import parse_json

if TYPE_CHECKING:
    from chatclient.events import ModelEvent

    from ._wire import StreamDecoder

__all__ = ["SseEvent", "SseStream", "aiter_ndjson", "aiter_sse", "fed", "iter_ndjson", "iter_sse"]

SseEvent = tuple[str, Any]
"""An SSE event name and its parsed JSON data."""

_DONE = "[DONE]"
MAX_EVENT_BYTES = 1024 * 1024
"""The largest SSE event (or NDJSON line) read: a server that never ends one cannot fill the memory."""


class _SseDecoder:
    """The SSE event-stream format (text in, ``(event, data)`` out), fed text in any pieces.

    Lines end with CRLF, LF or CR; a blank line dispatches the event, a line starting with ``:`` is
    a comment (a keep-alive), ``data`` lines join with ``\\n``; ``id`` and ``retry`` are not used by
    any provider here and are ignored like unknown fields."""

    __slots__ = ("_cr", "_data", "_event", "_pending", "_size")

    def __init__(self) -> None:
        self._pending = ""
        """The last line's text so far (no line end seen yet)."""
        self._cr = False
        """The previous piece ended with ``\\r``: a ``\\n`` first in this one belongs to that line end."""
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        """Characters of the current event's data so far."""

    def feed(self, text: str, provider: str) -> list[tuple[str, str]]:
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        lines[0] = self._pending + lines[0]
        self._pending = lines.pop()
        events: list[tuple[str, str]] = []
        for line in lines:
            if not line:
                if self._data or self._event:
                    events.append((self._event or "message", "\n".join(self._data)))
                self._event, self._data, self._size = "", [], 0
            elif line[0] != ":":
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    self._data.append(value)
                    self._size += len(value)
                elif name == "event":
                    self._event = value
        if self._size + len(self._pending) > MAX_EVENT_BYTES:
            raise MalformedResponseError(f"An event of the stream exceeds {MAX_EVENT_BYTES} bytes", provider=provider)
        return events


class SseStream:
    """``(event, data)`` for each SSE event of one response, sync or async; ``[DONE]`` and empty
    events are skipped, and :attr:`saw_done` says whether ``[DONE]`` came. An event not ended by a
    blank line when the body ends is not dispatched (the body was cut inside it)."""

    __slots__ = ("_provider", "_response", "saw_done")

    def __init__(self, response: httpx2.Response, *, provider: str) -> None:
        self._response = response
        self._provider = provider
        self.saw_done = False

    def _check_content_type(self) -> None:
        content_type = self._response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "text/event-stream":
            raise MalformedResponseError(
                f"Broken event stream: expected content type 'text/event-stream', got {content_type!r}",
                provider=self._provider,
            )

    def _events(self, pieces: list[tuple[str, str]]) -> Iterator[SseEvent]:
        provider = self._provider
        for event, data in pieces:
            if not data:
                continue
            if data == _DONE:
                self.saw_done = True
                continue
            yield event, parse_json(data, provider=provider)

    def __iter__(self) -> Iterator[SseEvent]:
        self._check_content_type()
        text, sse = _Utf8(self._provider), _SseDecoder()
        for chunk in self._response.iter_bytes():
            yield from self._events(sse.feed(text(chunk), self._provider))
        text.end()

    async def __aiter__(self) -> AsyncIterator[SseEvent]:
        self._check_content_type()
        text, sse = _Utf8(self._provider), _SseDecoder()
        async for chunk in self._response.aiter_bytes():
            for event in self._events(sse.feed(text(chunk), self._provider)):
                yield event
        text.end()


class _Utf8:
    """Strict incremental UTF-8: a character split between two pieces is joined, a byte that is not
    UTF-8 is a ``MalformedResponseError``, a body that ends inside a character a cut one."""

    __slots__ = ("_decoder", "_provider")

    def __init__(self, provider: str) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._provider = provider

    def end(self) -> None:
        """The body ended: inside a character, it was cut (``StreamIncompleteError``)."""
        left = self._decoder.getstate()[0]
        if left:
            raise StreamIncompleteError(
                f"The stream ended inside a UTF-8 character ({left!r})", provider=self._provider
            )

    def __call__(self, data: bytes) -> str:
        try:
            return self._decoder.decode(data)
        except UnicodeDecodeError as exc:
            raise MalformedResponseError(
                f"The stream is not valid UTF-8 ({exc.reason} at byte {exc.start} of a piece)", provider=self._provider
            ) from exc


def iter_sse(response: httpx2.Response, *, provider: str) -> SseStream:
    """The events of an SSE response (iterate it; read ``saw_done`` after)."""
    return SseStream(response, provider=provider)


def aiter_sse(response: httpx2.Response, *, provider: str) -> SseStream:
    """The same reader, for ``async for``."""
    return SseStream(response, provider=provider)


class _Lines:
    """NDJSON lines from bytes in any pieces: each complete, non-blank line as bytes (JSON is parsed
    from bytes, and the parser refuses bytes that are not UTF-8)."""

    __slots__ = ("_pending", "_provider")

    def __init__(self, provider: str) -> None:
        self._pending = b""
        self._provider = provider

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > MAX_EVENT_BYTES:
            raise MalformedResponseError(
                f"A line of the stream exceeds {MAX_EVENT_BYTES} bytes", provider=self._provider
            )
        return [line for line in lines if line.strip()]

    def end(self) -> list[bytes]:
        """The last line, if the body did not end with a line end: whole only if it parses."""
        last, self._pending = self._pending, b""
        if not last.strip():
            return []
        try:
            parse_json(last, provider=self._provider)
        except MalformedResponseError as exc:
            raise StreamIncompleteError(
                f"The stream ended in the middle of a line: {last[:200]!r}", provider=self._provider
            ) from exc
        return [last]


def iter_ndjson(response: httpx2.Response, *, provider: str) -> Iterator[Any]:
    """One parsed JSON value per non-empty line."""
    lines = _Lines(provider)
    for chunk in response.iter_bytes():
        for line in lines.feed(chunk):
            yield parse_json(line, provider=provider)
    for line in lines.end():
        yield parse_json(line, provider=provider)


async def aiter_ndjson(response: httpx2.Response, *, provider: str) -> AsyncIterator[Any]:
    lines = _Lines(provider)
    async for chunk in response.aiter_bytes():
        for line in lines.feed(chunk):
            yield parse_json(line, provider=provider)
    for line in lines.end():
        yield parse_json(line, provider=provider)


_FAULTS = (KeyError, TypeError, AttributeError, ValueError, IndexError, RecursionError)
"""What a parser raises on an event of an unexpected shape when it does not check it itself."""


def fed(decoder: StreamDecoder, item: Any, provider: str) -> list[ModelEvent]:
    """``decoder.feed(item)``, with every event's fields checked: whatever shape the wire sends, the
    caller gets model events it can fold, or a ``MalformedResponseError``, never another exception
    (a parser that trips over a field of the wrong type, or an event carrying one, which would only
    fail later, in whoever folds the events)."""
    try:
        events = decoder.feed(item)
        if type(events) is not list:
            events = list(events)
    except ChatClientError:
        raise
    except _FAULTS as exc:
        raise MalformedResponseError(
            f"Unexpected stream event ({type(exc).__name__}: {exc}): {item!r:.200}", provider=provider
        ) from exc
    for event in events:
        if not _well_typed(event):
            raise MalformedResponseError(
                f"A stream event has a field of the wrong type: {item!r:.200}", provider=provider
            )
    return events


def _well_typed(event: Any) -> bool:
    """The fields a delta event's consumers index and join are what they say (the events are plain
    dataclasses, not validated when made: one per delta)."""
    fields = getattr(event, "__dataclass_fields__", None)
    if fields is None:  # a ``ChatResponse`` chunk: a validated model
        return True
    if type(getattr(event, "index", 0)) is not int:
        return False
    for name in ("text", "id", "name", "type", "arguments"):
        if name in fields and type(getattr(event, name)) is not str:
            return False
    wire_id = getattr(event, "wire_id", None)
    return wire_id is None or type(wire_id) is str
