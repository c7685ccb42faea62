"""A real HTTP server on ``127.0.0.1`` (random port), in a subprocess, for faults a mock cannot show.

Sockets and file descriptors are what the lifecycle tests count, so the server runs in a process of
its own: its sockets never appear in the test process's descriptor table. It answers by the first
path segment of the request, so one server serves every scenario:

- ``/ok/...``: a Chat Completions reply (HTTP/1.1, keep-alive, so a client keeps its connection);
- ``/close/...``: the same reply with ``connection: close``, so no connection outlives the request;
- ``/html502/...``: the kind of HTML page a proxy sends for a 502.

It stops by itself: when the test process closes its stdin (or dies), or after ``LIFETIME`` seconds
in any case, so a failed test never leaves it behind.

Run as a script by :func:`loopback`; importing this module starts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = 120.0
"""Seconds after which the server exits whatever happens (no test needs it this long)."""

CHAT_REPLY = {
    "id": "chatcmpl-loopback",
    "object": "chat.completion",
    "created": 1,
    "model": "loopback",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}

BAD_GATEWAY_TITLE = "502 Bad Gateway"
BAD_GATEWAY_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>\n"
    "<style>body { font-family: sans-serif; } .x { color: #c00; }</style>\n"
    "<script>var trace = 'a-long-tracking-script';</script></head>\n"
    "<body><center><h1>502 Bad Gateway</h1></center>\n"
    "<p>The upstream server did not answer in time &amp; the gateway gave up.</p>\n"
    + "<!-- padding to make the page as long as real ones -->\n" * 60
    + "<hr><center>nginx</center>\n</body></html>\n"
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        scenario = self.path.strip("/").split("/")[0]
        if scenario == "html502":
            self._send(502, "text/html; charset=utf-8", BAD_GATEWAY_PAGE.encode())
        elif scenario == "ok":
            self._send(200, "application/json", json.dumps(CHAT_REPLY).encode())
        elif scenario == "close":
            self.close_connection = True
            self._send(200, "application/json", json.dumps(CHAT_REPLY).encode(), close=True)
        else:
            self._send(404, "text/plain", b"unknown scenario")

    def _send(self, status: int, content_type: str, body: bytes, *, close: bool = False) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        if close:
            self.send_header("connection", "close")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads stdout for the port only."""


def _serve() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()

    def stop_when_parent_goes() -> None:
        sys.stdin.read()  # returns at EOF: the parent closed our stdin or exited
        server.shutdown()

    threading.Thread(target=stop_when_parent_goes, daemon=True).start()
    threading.Timer(LIFETIME, server.shutdown).start()
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        os._exit(0)  # without waiting for the lifetime timer's thread


@contextmanager
def loopback() -> Iterator[str]:
    """Starts the server; yields its base URL (``http://127.0.0.1:<port>``); stops it on exit."""
    process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stdin.close()
        process.stdout.close()
        process.wait(timeout=30)


if __name__ == "__main__":
    _serve()
