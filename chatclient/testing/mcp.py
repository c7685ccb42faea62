"""Run an MCP server on a random loopback port for a test (needs ``chatclient[mcp]``).

    with running_mcp_server(server) as url:
        provider = McpToolCallbackProvider(McpServerConnection.http(url, name="demo"))

The socket is created with ``IPPROTO_TCP`` (otherwise every loopback response waits ~44 ms for a
delayed ACK) and the server stops by itself when the block ends, even with clients still attached.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["running_mcp_server"]


@contextmanager
def running_mcp_server(
    server: Any, *, stateless: bool = False, json_response: bool = False, path: str = "/mcp"
) -> Iterator[str]:
    """Serve ``server`` (an ``mcp`` ``MCPServer``) over Streamable HTTP on 127.0.0.1; yields its URL."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, stateless_http=stateless, json_response=json_response)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, name="mcp-test-server", daemon=True)
    thread.start()
    try:
        while not http.started:
            if not thread.is_alive():
                raise RuntimeError("the MCP test server did not start")
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        http.should_exit = True
        thread.join(10)
        sock.close()
