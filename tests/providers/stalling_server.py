"""A loopback HTTP server (``127.0.0.1``, random port, in a thread) that stalls, for deadline tests.

It records every request that reaches it (an :class:`Attempt`) and how each one ended: a stalled
request is *abandoned* when the client hangs up before any answer. That is the server's own view
of the caller's limit, so the tests assert it rather than a clock.

Scenarios by the first path segment of the request:

- ``/stall/...``: never answers; waits (bounded by ``STALL_LIMIT``) for the client to hang up;
- ``/busy<N>/...``: the first ``N`` requests get a 503, later ones stall;
- ``/slow503/...``: a 503 asking to retry after 30 s;
- ``/trickle/...``: a Chat Completions stream that never ends: a delta every ``TRICKLE`` seconds;
- ``/stallmid/...``: the same stream's first delta, then silence;
- ``/script/<name>/...``: the replies :meth:`StallingServer.script` gave ``name``, one per request in
  order (a :class:`Canned` reply: sent whole, cut by closing the connection, or a connection reset
  before any byte or after the first chunk of the body).

It stops by itself: each stall is bounded, and the server is shut down when the ``with`` ends.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from chatclient.testing.fault_server import serving, wait_for_hang_up

STALL_LIMIT = 20.0
"""Seconds a stalled request waits for the client to hang up before the server gives up on it."""

TRICKLE = 0.05
DELTA = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n\n'
)


@dataclass(frozen=True)
class Canned:
    """One scripted reply. ``how``: ``"send"`` it whole (with a ``content-length``); ``"cut"``: its
    status, headers and ``body`` as given, then the connection closed (a close-delimited body that
    ended early); ``"reset"``: a TCP reset before any byte; ``"reset-mid"``: the headers and ``body``
    as the first chunk of a chunked body, then a TCP reset."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    how: Literal["send", "cut", "reset", "reset-mid"] = "send"


@dataclass
class Attempt:
    scenario: str
    answered: bool = False
    abandoned: bool = False
    ended: threading.Event = field(default_factory=threading.Event)


class StallingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.attempts: list[Attempt] = []
        self.lock = threading.Lock()
        self.scripts: dict[str, list[Canned]] = {}

    def script(self, name: str, *replies: Canned) -> str:
        """Serve ``replies`` in order to the requests under ``/script/<name>`` (the last one to every
        later request too); returns that base URL."""
        with self.lock:
            self.scripts[name] = list(replies)
        return f"{self.url}/script/{name}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def settled(self, timeout: float = 10.0) -> list[Attempt]:
        """The attempts, once each has ended as the server saw it (bounded wait)."""
        with self.lock:
            attempts = list(self.attempts)
        for attempt in attempts:
            attempt.ended.wait(timeout)
        return attempts


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StallingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        scenario = self.path.strip("/").split("/")[0]
        attempt = Attempt(scenario)
        with self.server.lock:
            self.server.attempts.append(attempt)
            seen = sum(1 for a in self.server.attempts if a.scenario == scenario)
        try:
            if scenario == "script":
                attempt.answered = self._scripted(self.path.strip("/").split("/")[1])
                return
            if scenario == "slow503":
                self._busy(retry_after="30")
            elif scenario.startswith("busy") and seen <= int(scenario[4:]):
                self._busy(retry_after=None)
            elif scenario in ("trickle", "stallmid"):
                attempt.abandoned = self._stream(trickle=scenario == "trickle")
                self.close_connection = True
                return
            else:
                attempt.abandoned = self._stall()
                self.close_connection = True
                return
            attempt.answered = True
        finally:
            attempt.ended.set()

    def _scripted(self, name: str) -> bool:
        """The next reply of script ``name``; False when the connection was reset or cut instead."""
        with self.server.lock:
            queue = self.server.scripts.get(name) or [Canned(599, body=b"the script has no more replies")]
            reply = queue.pop(0) if len(queue) > 1 or queue[0].status == 599 else queue[0]
        if reply.how == "reset":
            self._reset()
            return False
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        if reply.how == "send":
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return True
        if reply.how == "cut":
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(reply.body)
            self.close_connection = True
            return False
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.write(f"{len(reply.body):x}\r\n".encode() + reply.body + b"\r\n")
        self.wfile.flush()
        self._reset()
        return False

    def _reset(self) -> None:
        """Close the connection with a TCP reset (``SO_LINGER`` of 0), as a crashed peer or a proxy does."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _busy(self, retry_after: str | None) -> None:
        body = json.dumps({"error": {"message": "busy", "type": "server_error"}}).encode()
        self.send_response(503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        if retry_after is not None:
            self.send_header("retry-after", retry_after)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, *, trickle: bool) -> bool:
        """An endless (close-delimited) event stream; True when the client hung up on it."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        give_up = time.monotonic() + STALL_LIMIT
        try:
            self.wfile.write(DELTA)
            self.wfile.flush()
            if not trickle:
                return self._stall()
            while time.monotonic() < give_up:
                time.sleep(TRICKLE)
                self.wfile.write(DELTA)
                self.wfile.flush()
        except OSError:
            return True
        return False

    def _stall(self) -> bool:
        """Wait without answering until the client hangs up (True) or ``STALL_LIMIT`` passes."""
        return wait_for_hang_up(self.connection, STALL_LIMIT)

    def log_message(self, format: str, *args: object) -> None:
        pass


def stalling_server() -> AbstractContextManager[StallingServer]:
    return serving(StallingServer())
