"""Run an MCP server on a random loopback port for a test (needs ``chatclient[mcp]``).

    with running_mcp_server(server) as url:
        provider = McpToolCallbackProvider(McpServerConnection.http(url, name="demo"))

The socket is created with ``IPPROTO_TCP`` (otherwise every loopback response waits ~44 ms for a
delayed ACK) and the server stops by itself when the block ends, even with clients still attached.
:func:`serving_mcp_server` yields a :class:`ServedMcp` instead, which also counts what the server
saw (TCP connections, HTTP requests with their session ids), and takes ``port=`` to start a server
again where a previous one ran (a restart).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["McpRequestSeen", "ServedMcp", "running_mcp_server", "serving_mcp_server"]


@dataclass(frozen=True)
class McpRequestSeen:
    """One HTTP request the server saw: its method, ``mcp-session-id`` header and status (0: no answer)."""

    method: str
    session_id: str | None
    status: int


@dataclass
class ServedMcp:
    """A running test server: where it listens and what it has seen so far."""

    url: str
    port: int
    connections: int = 0
    """TCP connections the server accepted."""
    requests: list[McpRequestSeen] = field(default_factory=list)


@contextmanager
def running_mcp_server(
    server: Any, *, stateless: bool = False, json_response: bool = False, path: str = "/mcp"
) -> Iterator[str]:
    """Serve ``server`` (an ``mcp`` ``MCPServer``) over Streamable HTTP on 127.0.0.1; yields its URL."""
    with serving_mcp_server(server, stateless=stateless, json_response=json_response, path=path) as served:
        yield served.url


@contextmanager
def serving_mcp_server(
    server: Any, *, stateless: bool = False, json_response: bool = False, path: str = "/mcp", port: int = 0
) -> Iterator[ServedMcp]:
    """Serve ``server`` on 127.0.0.1 (``port=0``: a free port), counting connections and requests."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, stateless_http=stateless, json_response=json_response)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    served = ServedMcp(url=f"http://127.0.0.1:{port}{path}", port=port)
    config = uvicorn.Config(_recording(app, served), log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    config.load()
    config.http_protocol_class = _counting(config.http_protocol_class, served)
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, name="mcp-test-server", daemon=True)
    thread.start()
    try:
        while not http.started:
            if not thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            threading.Event().wait(0.01)
        yield served
    finally:
        http.should_exit = True
        thread.join(10)
        sock.close()


def _counting(protocol: Any, served: ServedMcp) -> Any:
    """The server's HTTP protocol class, counting each accepted connection."""

    class Counting(protocol):  # type: ignore[misc]
        def connection_made(self, transport: Any) -> None:
            served.connections += 1
            super().connection_made(transport)

    return Counting


def _recording(app: Any, served: ServedMcp) -> Any:
    """The ASGI app, recording each HTTP request's method, session id and response status."""

    async def record(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        raw = headers.get(b"mcp-session-id")
        session = raw.decode() if raw else None
        recorded = {"done": False}

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start" and not recorded["done"]:
                # recorded before the client can read the answer, so a test sees it once the call returns
                recorded["done"] = True
                served.requests.append(McpRequestSeen(scope["method"], session, message["status"]))
            await send(message)

        try:
            await app(scope, receive, sending)
        finally:
            if not recorded["done"]:
                served.requests.append(McpRequestSeen(scope["method"], session, 0))

    return record
