"""A TCP proxy on 127.0.0.1 (random port, threads) in front of a real Redis or PostgreSQL, that a test
can cut — every open connection closed and new ones refused, as when the server stops — and restore,
as when it comes back; or lose one reply: the next answer the server sends is dropped and its
connection closed, after the server ran the command (the one failure a retry cannot tell from a
command never sent). The shared test servers keep running; only this test's connections see it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit, urlunsplit

__all__ = ["CuttableProxy", "cuttable"]


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._lose_reply = threading.Event()
        self._lose_containing = b""
        self.replies_lost = 0
        self.restore()

    def restore(self) -> None:
        """Accept connections (again, on the same port)."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Close every connection and refuse new ones (the server is down)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            listener.close()
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def lose_next_reply(self, containing: bytes = b"") -> None:
        """Drop the server's next answer (the next holding ``containing``) and close that
        connection; the proxy keeps accepting. ``containing`` picks the answer out of a pool's
        other traffic (its connection checks)."""
        self._lose_containing = containing
        self._lose_reply.set()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut: the listener is closed
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for source, sink, replies in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(source, sink, replies), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, replies: bool) -> None:
        try:
            while data := source.recv(65536):
                if replies and self._lose_reply.is_set() and self._lose_containing in data:
                    self._lose_reply.clear()
                    self.replies_lost += 1
                    break  # the answer is dropped; both sockets are shut below
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def cuttable(url: str) -> Iterator[tuple[CuttableProxy, str]]:
    """A proxy in front of the server at ``url`` and the same URL through it; cut at the end."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    proxy = CuttableProxy(parts.hostname, parts.port)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    through = urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))
    try:
        yield proxy, through
    finally:
        proxy.cut()
