"""A real HTTP server on ``127.0.0.1`` (random port, in a thread) that misbehaves on purpose, for the
conformance kit's transport checks: faults a mock transport cannot show (a connection closed mid
stream, a chunked body that ends early, a stall, a client that hangs up).

It serves one canned ``httpx2.Response`` (a provider's streamed reply, or its error reply) in the way
the first path segment asks:

- ``/whole/...``: the reply as it is (status, headers, body with a ``content-length``);
- ``/cut-chunked/...``: ``200`` with the reply's headers, the body's first events sent as HTTP/1.1
  chunks, then a clean end of the chunked body: a stream that ends early but "properly";
- ``/cut-close/...``: the same first events with neither length nor chunking, then the connection
  closed (a close-delimited body, as a proxy that gives up leaves it);
- ``/hold/...``: the first events, then nothing, until the client hangs up;
- ``/stall/...``: no answer at all, until the client hangs up;
- ``/trickle/...``: the reply's status and headers at once, then its body as HTTP/1.1 chunks of
  :data:`TRICKLE_BYTES` bytes every :data:`TRICKLE_EVERY` seconds, padded with blank lines (JSON
  whitespace, empty SSE events, empty NDJSON lines) so that it goes on for ``trickle_for`` seconds
  before it ends: each read is quick, the whole is not; only a deadline on the whole stops it;
- ``/trickle-head/...``: the same slowness in the headers: the status line, then a padding header
  line of :data:`TRICKLE_BYTES` bytes every :data:`TRICKLE_EVERY` seconds for ``trickle_for``
  seconds, then the reply as ``/whole`` sends it.

Each request is recorded (:class:`Visit`), with whether the client hung up on it: that is the server's
own view of a deadline or a cancel, so checks assert it rather than a clock. Every wait is bounded by
:data:`WAIT_LIMIT`, and the server stops when the ``with`` block ends.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

import httpx2

__all__ = ["FaultServer", "Visit", "fault_server", "first_events", "serving", "wait_for_hang_up"]

WAIT_LIMIT = 15.0
"""Seconds the server waits for a client to hang up before it gives up (no check needs this long)."""

TRICKLE_BYTES = 64
TRICKLE_EVERY = 0.2

_SKIPPED_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "content-encoding"})


@dataclass
class Visit:
    """One request as the server saw it."""

    scenario: str
    headers: dict[str, str]
    hung_up: bool = False
    """The client closed the connection while the server was holding it open."""
    finished: bool = False
    """A trickled body was sent to its end: the client did not hang up for ``trickle_for`` seconds."""
    ended: threading.Event = field(default_factory=threading.Event)


def first_events(body: bytes) -> bytes:
    """The first half of a streamed body's events (at least one, never all), cut at an event boundary.

    SSE events end with a blank line (``\r\n\r\n`` in Gemini's streams), NDJSON values with a newline:
    either way the cut leaves whole events, so what a provider sees is a stream that stopped before its
    terminal event.
    """
    separator = next((s for s in (b"\r\n\r\n", b"\n\n") if s in body), b"\n")
    events = [event for event in body.split(separator) if event.strip()]
    if len(events) < 2:
        raise AssertionError("a streamed reply for the cut-stream check needs at least two events")
    kept = events[: max(1, len(events) // 2)]
    return b"".join(event + separator for event in kept)


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, reply: httpx2.Response, *, trickle_for: float = WAIT_LIMIT) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.trickle_for = trickle_for
        self.visits: list[Visit] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def settled(self, timeout: float = WAIT_LIMIT) -> list[Visit]:
        """The visits, once each has ended as the server saw it (a bounded wait)."""
        with self.lock:
            visits = list(self.visits)
        for visit in visits:
            visit.ended.wait(timeout)
        return visits


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        visit = Visit(self.path.strip("/").split("/")[0], {k.lower(): v for k, v in self.headers.items()})
        with self.server.lock:
            self.server.visits.append(visit)
        try:
            self._serve(visit)
        except OSError:
            visit.hung_up = True
        finally:
            visit.ended.set()

    def _serve(self, visit: Visit) -> None:
        reply = self.server.reply
        if visit.scenario == "stall":
            visit.hung_up = wait_for_hang_up(self.connection)
            self.close_connection = True
            return
        if visit.scenario == "trickle":
            self.close_connection = True
            self._head(reply.status_code, reply, chunked=True)
            self._trickle(visit, reply.content)
            return
        if visit.scenario == "trickle-head":
            self.close_connection = True
            if self._trickle_head(visit):
                self._head(reply.status_code, reply, length=len(reply.content), status_line=False)
                self.wfile.write(reply.content)
            return
        if visit.scenario == "whole":
            self._head(reply.status_code, reply, length=len(reply.content))
            self.wfile.write(reply.content)
            return
        part = first_events(reply.content)
        self.close_connection = True
        if visit.scenario == "cut-chunked":
            self._head(200, reply, chunked=True)
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(part), part))
        elif visit.scenario == "cut-close":
            self._head(200, reply, close=True)
            self.wfile.write(part)
        elif visit.scenario == "hold":
            self._head(200, reply, close=True)
            self.wfile.write(part)
            self.wfile.flush()
            visit.hung_up = wait_for_hang_up(self.connection)
        else:
            self.send_error(404, f"no scenario {visit.scenario!r}")

    def _trickle(self, visit: Visit, content: bytes) -> None:
        """``content`` then blank lines, a few bytes at a time, until ``trickle_for`` has passed or the
        client hangs up (seen between two pieces, or as a failed write)."""
        ends = time.monotonic() + self.server.trickle_for
        sent = 0
        while time.monotonic() < ends:
            piece = content[sent : sent + TRICKLE_BYTES]
            piece += b"\n" * (TRICKLE_BYTES - len(piece))
            sent += TRICKLE_BYTES
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if wait_for_hang_up(self.connection, TRICKLE_EVERY):
                visit.hung_up = True
                return
        self.wfile.write(b"0\r\n\r\n")
        visit.finished = True

    def _trickle_head(self, visit: Visit) -> bool:
        """The status line, then padding headers a few bytes at a time; True when ``trickle_for``
        has passed without the client hanging up (the rest of the reply is then sent)."""
        self.wfile.write(b"HTTP/1.1 %d OK\r\n" % self.server.reply.status_code)
        line = b"x-padding: " + b"p" * (TRICKLE_BYTES - 13) + b"\r\n"
        ends = time.monotonic() + self.server.trickle_for
        while time.monotonic() < ends:
            self.wfile.write(line)
            self.wfile.flush()
            if wait_for_hang_up(self.connection, TRICKLE_EVERY):
                visit.hung_up = True
                return False
        visit.finished = True
        return True

    def _head(
        self,
        status: int,
        reply: httpx2.Response,
        *,
        length: int | None = None,
        chunked: bool = False,
        close: bool = False,
        status_line: bool = True,
    ) -> None:
        if status_line:
            self.send_response(status)
        for name, value in reply.headers.multi_items():
            if name.lower() not in _SKIPPED_HEADERS:
                self.send_header(name, value)
        if length is not None:
            self.send_header("content-length", str(length))
        if chunked:
            self.send_header("transfer-encoding", "chunked")
        if close:
            self.send_header("connection", "close")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a check's failure says what went wrong."""


def wait_for_hang_up(connection: socket.socket, limit: float = WAIT_LIMIT) -> bool:
    """Wait without sending until the client closes ``connection`` (True) or ``limit`` seconds pass."""
    give_up = time.monotonic() + limit
    while time.monotonic() < give_up:
        readable, _, _ = select.select([connection], [], [], 0.05)
        if readable:
            try:
                if connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
    return False


S = TypeVar("S", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: S) -> Iterator[S]:
    """Runs ``server`` in a thread until the block ends, then shuts it down and closes its socket."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def fault_server(reply: httpx2.Response, *, trickle_for: float = WAIT_LIMIT) -> AbstractContextManager[FaultServer]:
    """Serves ``reply`` in the fault scenarios on a random loopback port until the block ends
    (``trickle_for``: how long the ``/trickle`` scenario takes to send its body)."""
    return serving(FaultServer(reply, trickle_for=trickle_for))
