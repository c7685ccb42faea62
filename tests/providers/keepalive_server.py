"""A loopback server (``127.0.0.1``, random port) that sends the first events of a stream and then
keep-alives forever: SSE comments (``: keep-alive``) or blank NDJSON lines, one every
:data:`KEEPALIVE_EVERY` seconds, until the client hangs up; a binary event stream, which has no
keep-alive, just stalls (``keepalives`` then counts the silent intervals). Each read is quick and the stream never
ends by itself: only the request's deadline stops it. The server's own view (``hung_up``, the
keep-alives sent) is what a test asserts, not a clock.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chatclient.model import ChatModel
from chatclient.testing.fault_server import serving, wait_for_hang_up

from .stream_fuzz import Stream

DEADLINE = 0.5
KEEPALIVE_EVERY = 0.05
SEND_FOR = 60.0
"""How long the server would go on: far past any deadline here."""


class KeepaliveServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, first: bytes, stream: Stream) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.first = first
        self.stream = stream
        self.keepalives = 0
        self.hung_up = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def model(self, stream: Stream) -> ChatModel:
        """The stream's model, on this server, with a deadline of :data:`DEADLINE` seconds."""
        return stream.model(self.url, timeout=DEADLINE)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KeepaliveServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        server = self.server
        self.close_connection = True
        self.send_response(200)
        self.send_header("content-type", server.stream.content_type)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        keepalive = server.stream.keepalive
        try:
            if server.first:  # an empty chunk would be chunked encoding's end of body
                self._chunk(server.first)
            for _ in range(int(SEND_FOR / KEEPALIVE_EVERY)):
                if keepalive:
                    self._chunk(keepalive)
                server.keepalives += 1
                if wait_for_hang_up(self.connection, KEEPALIVE_EVERY):
                    break
        except OSError:
            pass
        server.hung_up.set()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def keepalive_server(first: bytes, stream: Stream) -> AbstractContextManager[KeepaliveServer]:
    """Serves ``first`` and then ``stream``'s keep-alives on a random loopback port until the block ends."""
    return serving(KeepaliveServer(first, stream))
