"""One thread that ends the sync body reads a deadline has run out on.

A sync read blocks in ``recv`` until bytes come or its read timeout passes, so a server that sends a
few bytes now and then keeps a body going for ever, each read within its timeout. Only another
thread can end such a read: this module keeps one for the whole process (started by the first read
it watches), not one per request. A request registers itself from the moment it is sent until its
body has been read (a set entry under a lock: no thread, no timer object per request); the thread
sleeps until the earliest registered deadline and, at it, shuts down the socket of each exchange
still under way (found from the response, or, while the headers are awaited, from the pool).
The blocked ``recv`` returns at once and the reader (``_http._DeadlineStream``) raises the deadline's
error; the connection is closed with the response, never put back in the pool half read.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
from typing import Any, Protocol

__all__ = ["WATCHDOG", "Pending", "Watch", "Watchdog", "shut_down"]

_log = logging.getLogger("chatclient.providers")


def shut_down(response: Any) -> None:
    """Shut the response's socket down (safe from any thread, unlike closing the response).

    Only for HTTP/1.x, where the connection carries this one exchange: an HTTP/2 connection carries
    others too, so there the reader's own read timeout (cut to the deadline) ends the read.
    """
    if not str(getattr(response, "http_version", "")).startswith("HTTP/1"):
        return
    extensions = getattr(response, "extensions", None) or {}
    stream = extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)


class Pending(Protocol):
    """An exchange whose response has not come yet: it finds and shuts down its own connection."""

    def abort(self) -> None: ...


class Watch:
    """One exchange being watched until ``ends`` (``time.monotonic()``): its ``response`` once the
    headers came, else what is ``pending``; ``fired``: it was cut."""

    __slots__ = ("ends", "fired", "pending", "response")

    def __init__(self, ends: float, response: Any, pending: Pending | None) -> None:
        self.ends, self.response, self.pending, self.fired = ends, response, pending, False

    def cut(self) -> None:
        self.fired = True
        if self.response is not None:
            shut_down(self.response)
        elif self.pending is not None:
            self.pending.abort()


class Watchdog:
    """Shuts down the responses still being read past their deadline; see the module's docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._watched: set[Watch] = set()
        self._next = math.inf
        """When the thread looks next: a new watch that ends earlier wakes it, a later one does not."""
        self._thread: threading.Thread | None = None

    def watch(self, ends: float, response: Any = None, *, pending: Pending | None = None) -> Watch:
        """Watch ``response`` (or, until it comes, ``pending``) until :meth:`release`; cut it if it is
        still watched at ``ends``. Set :attr:`Watch.response` when the response comes."""
        watch = Watch(ends, response, pending)
        with self._lock:
            self._watched.add(watch)
            if ends < self._next:
                self._next = ends
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="chatclient-deadline", daemon=True)
                    self._thread.start()
                else:
                    self._wake.notify()
        return watch

    def release(self, watch: Watch) -> None:
        """Stop watching (before the response is closed: its connection may then serve another request,
        whose socket must never be shut down for this one's deadline)."""
        with self._lock:
            self._watched.discard(watch)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                earliest = math.inf
                for watch in [w for w in self._watched if w.ends <= now]:
                    self._watched.discard(watch)
                    try:
                        watch.cut()
                    except Exception:  # the thread serves every request: it must not die
                        _log.warning("cutting a request at its deadline failed", exc_info=True)
                for watch in self._watched:
                    earliest = min(earliest, watch.ends)
                self._next = earliest
                self._wake.wait(None if earliest == math.inf else earliest - now)

    def _forget_thread(self) -> None:
        """In a forked child the thread is gone; the next watch starts another."""
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._watched = set()
        self._next = math.inf
        self._thread = None


WATCHDOG = Watchdog()
"""The process's watchdog."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG._forget_thread)
