"""Where the requests go: the in-process mock transport (S1 to S3, S7) or the loopback server (S4, S5).

Every library gets its HTTP clients from here, so all of them are served the same canned bytes by the
same handler. All libraries compared here (including the official SDKs) are built on httpx2, so the
mock is ``httpx2.MockTransport``; ``httpx_*`` variants exist for a peer that still uses plain httpx.
"""

from __future__ import annotations

from typing import Any

import httpx2

from .canned import ANTHROPIC_BASE, BEDROCK_BASE, GEMINI_BASE, OPENAI_BASE, headers_for, route

_MOCK_BASES = {"openai": OPENAI_BASE, "anthropic": ANTHROPIC_BASE, "gemini": GEMINI_BASE, "bedrock": BEDROCK_BASE}
_LOOPBACK_PATHS = {"openai": "/v1", "anthropic": "", "gemini": "/v1beta", "bedrock": ""}


class MockBackend:
    """The in-process mock: ``route()`` answers, optionally recording every request body."""

    kind = "mock"

    def __init__(self, wire: str, *, record: list[bytes] | None = None) -> None:
        self.wire = wire
        self.base_url = _MOCK_BASES[wire]
        self.record = record
        self.requests = 0

    def handler(self, request: Any) -> Any:
        body = request.content
        self.requests += 1
        if self.record is not None:
            self.record.append(body)
        content, stream = route(request.url.path, body)
        return httpx2.Response(200, headers=headers_for(request.url.path, stream), content=content)

    def sync_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))

    # For a peer on plain httpx (none at the time of writing): the identical handler.
    def httpx_sync_client(self) -> Any:
        import httpx

        def handler(request: Any) -> Any:
            content, stream = route(request.url.path, request.content)
            return httpx.Response(200, headers=headers_for(request.url.path, stream), content=content)

        return httpx.Client(transport=httpx.MockTransport(handler))


class LoopbackBackend:
    """The loopback server (``benchmarks.server``) at ``http://127.0.0.1:<port>``.

    Clients have httpx2's default limits (100 connections, 20 kept alive), as a plain
    ``httpx2.AsyncClient()`` and chatclient's own clients do.
    """

    kind = "loopback"

    def __init__(self, wire: str, port: int) -> None:
        self.wire = wire
        root = f"http://127.0.0.1:{port}"
        self.base_url = f"{root}{_LOOPBACK_PATHS[wire]}"

    def sync_client(self) -> httpx2.Client:
        return httpx2.Client(timeout=60.0)

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=60.0)


Backend = MockBackend | LoopbackBackend
