"""Decoding streamed replies: SSE (httpx2's EventSource) and NDJSON, into JSON payloads.

Whether a stream was complete is the provider's question (each API has its own last event), but
Chat Completions' terminal event is the ``[DONE]`` sentinel, which carries no JSON: so the SSE
reader skips it and notes that it came (:attr:`SseStream.saw_done`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2

from chatclient.errors import MalformedResponseError

from ._errors import parse_json

__all__ = ["SseEvent", "SseStream", "aiter_ndjson", "aiter_sse", "iter_ndjson", "iter_sse"]

SseEvent = tuple[str, Any]
"""An SSE event name and its parsed JSON data."""

_DONE = "[DONE]"


class SseStream:
    """``(event, data)`` for each SSE event of one response, sync or async; ``[DONE]`` and empty
    events are skipped, and :attr:`saw_done` says whether ``[DONE]`` came."""

    __slots__ = ("_provider", "_response", "saw_done")

    def __init__(self, response: httpx2.Response, *, provider: str) -> None:
        self._response = response
        self._provider = provider
        self.saw_done = False

    def __iter__(self) -> Iterator[SseEvent]:
        provider = self._provider
        try:
            for event in httpx2.EventSource(self._response):
                data = event.data
                if not data:
                    continue
                if data == _DONE:
                    self.saw_done = True
                    continue
                yield event.event, parse_json(data, provider=provider)
        except httpx2.SSEError as exc:
            raise MalformedResponseError(f"Broken event stream: {exc}", provider=provider) from exc

    async def __aiter__(self) -> AsyncIterator[SseEvent]:
        provider = self._provider
        try:
            async for event in httpx2.EventSource(self._response):
                data = event.data
                if not data:
                    continue
                if data == _DONE:
                    self.saw_done = True
                    continue
                yield event.event, parse_json(data, provider=provider)
        except httpx2.SSEError as exc:
            raise MalformedResponseError(f"Broken event stream: {exc}", provider=provider) from exc


def iter_sse(response: httpx2.Response, *, provider: str) -> SseStream:
    """The events of an SSE response (iterate it; read ``saw_done`` after)."""
    return SseStream(response, provider=provider)


def aiter_sse(response: httpx2.Response, *, provider: str) -> SseStream:
    """The same reader, for ``async for``."""
    return SseStream(response, provider=provider)


def iter_ndjson(response: httpx2.Response, *, provider: str) -> Iterator[Any]:
    """One parsed JSON value per non-empty line."""
    for line in response.iter_lines():
        if line.strip():
            yield parse_json(line, provider=provider)


async def aiter_ndjson(response: httpx2.Response, *, provider: str) -> AsyncIterator[Any]:
    async for line in response.aiter_lines():
        if line.strip():
            yield parse_json(line, provider=provider)
