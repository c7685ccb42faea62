"""Decoding streamed replies: SSE (httpx2's EventSource) and NDJSON, into JSON payloads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2

from chatclient.errors import MalformedResponseError

from ._http import parse_json

__all__ = ["SseEvent", "aiter_ndjson", "aiter_sse", "iter_ndjson", "iter_sse"]

SseEvent = tuple[str, Any]
"""An SSE event name and its parsed JSON data."""


def _decode(event: httpx2.ServerSentEvent, provider: str) -> SseEvent | None:
    data = event.data
    if not data or data == "[DONE]":
        return None
    return event.event, parse_json(data, provider=provider)


def iter_sse(response: httpx2.Response, *, provider: str) -> Iterator[SseEvent]:
    """``(event, data)`` for each SSE event; ``[DONE]`` and empty events are skipped."""
    try:
        for event in httpx2.EventSource(response):
            decoded = _decode(event, provider)
            if decoded is not None:
                yield decoded
    except httpx2.SSEError as exc:
        raise MalformedResponseError(f"Broken event stream: {exc}", provider=provider) from exc


async def aiter_sse(response: httpx2.Response, *, provider: str) -> AsyncIterator[SseEvent]:
    try:
        async for event in httpx2.EventSource(response):
            decoded = _decode(event, provider)
            if decoded is not None:
                yield decoded
    except httpx2.SSEError as exc:
        raise MalformedResponseError(f"Broken event stream: {exc}", provider=provider) from exc


def iter_ndjson(response: httpx2.Response, *, provider: str) -> Iterator[Any]:
    """One parsed JSON value per non-empty line."""
    for line in response.iter_lines():
        if line.strip():
            yield parse_json(line, provider=provider)


async def aiter_ndjson(response: httpx2.Response, *, provider: str) -> AsyncIterator[Any]:
    async for line in response.aiter_lines():
        if line.strip():
            yield parse_json(line, provider=provider)
