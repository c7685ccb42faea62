"""One request's deadline, across its attempts and the waits between them, and the response bodies
read within it: the watchdog thread (:mod:`providers._watchdog`) cuts a sync exchange at the deadline,
the loop's timer (:mod:`providers._cutoff`) an async one, however slowly a reply trickles in."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, TypeVar

import httpx2

from chatclient.errors import DeadlineExceeded

from ._cutoff import Cut, cancel_at, cut_at
from ._watchdog import WATCHDOG, Watch, shut_down

T = TypeVar("T")

__all__ = [
    "DEADLINE_EXCEEDED",
    "STILL_READING",
    "TIMER_SLACK",
    "AsyncDeadlineStream",
    "Deadline",
    "DeadlineStream",
    "PendingSend",
    "cut_off",
    "numeric_timeout",
]

_log = logging.getLogger("chatclient.providers")

DEADLINE_EXCEEDED = "deadline_exceeded"
"""The ``error_type`` of the ``DeadlineExceeded`` (an ``APITimeoutError``) raised when a request's deadline is hit."""

TIMER_SLACK = 0.005


def _each_within(timeout: httpx2.Timeout, seconds: float) -> bool:
    parts = (timeout.connect, timeout.read, timeout.write, timeout.pool)
    return all(part is not None and part <= seconds for part in parts)


_last_within: tuple[httpx2.Timeout, float] | None = None
"""The last (client timeout, deadline) found :func:`_each_within`: every request of a model asks the
same question of the same two values, so it is answered once (one tuple: a thread reads all or none)."""


def _within(timeout: httpx2.Timeout, seconds: float) -> bool:
    global _last_within
    last = _last_within
    if last is not None and last[0] is timeout and last[1] == seconds:
        return True
    if not _each_within(timeout, seconds):
        return False
    _last_within = (timeout, seconds)
    return True


class Deadline:
    """The time one request may still take, across its attempts and the waits between them.

    ``timeout`` is the client's per-attempt timeout (the model's, or the injected client's); each
    attempt gets it, each part cut to the time left, so the caller's limit holds whatever the
    per-attempt value.
    """

    __slots__ = ("attempts", "ends", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.attempts = 0

    def left(self) -> float:
        return self.ends - time.monotonic()

    def expired(self) -> bool:
        """Whether it has passed (give or take a timer's rounding): a timeout now is the deadline's."""
        return self.left() <= TIMER_SLACK

    def attempt_timeouts(self, timeout: httpx2.Timeout) -> dict[str, float]:
        """The timeouts of the next attempt (as httpx2's request extension); counts the attempt."""
        left = max(self.left(), 0.001)
        self.attempts += 1
        parts = timeout.as_dict()
        return {name: left if value is None else min(value, left) for name, value in parts.items()}

    def cut_timeouts(self, timeout: httpx2.Timeout) -> dict[str, float] | None:
        """Like :meth:`attempt_timeouts`, but ``None`` for a first attempt whose own timeouts all end
        within the deadline already (a numeric model ``timeout``: the common case pays for no cut)."""
        if self.attempts == 0 and _within(timeout, self.seconds):
            self.attempts = 1
            return None
        return self.attempt_timeouts(timeout)

    def exceeded(self, provider: str, why: str) -> DeadlineExceeded:
        """The error of a deadline hit, logged at INFO here: the one place every hit passes."""
        runs = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        message = f"The deadline of {self.seconds:g} s was reached after {runs} ({why})"
        _log.info("%s request: %s", provider, message)
        return DeadlineExceeded(message, provider=provider, error_type=DEADLINE_EXCEEDED)


STILL_READING = "the reply had not come in full"


class DeadlineStream(httpx2.SyncByteStream):
    """A response body read within the request's deadline, whether streamed or read whole.

    Each read is bounded by the time left when the attempt began (its read timeout was cut), and the
    clock is checked at each chunk; but a body that keeps trickling in, a few bytes within each read
    timeout, would outlive both. So until the body has been read the exchange is registered with
    the process's :data:`~providers._watchdog.WATCHDOG` (from the moment it was sent, ``watch``, or
    from the first read), which shuts its socket down at the deadline; the blocked read returns, and
    whatever it returns (an error, or the end of a close-delimited body) becomes the deadline's error.
    """

    def __init__(
        self, response: httpx2.Response, deadline: Deadline, provider: str, watch: Watch | None = None
    ) -> None:
        self._inner: Any = response.stream
        self._response, self._deadline, self._provider = response, deadline, provider
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        deadline = self._deadline
        ends = deadline.ends
        watch = self._watch
        if watch is None:
            watch = self._watch = WATCHDOG.watch(ends, self._response)
        try:
            for chunk in self._inner:
                if time.monotonic() > ends:
                    raise deadline.exceeded(self._provider, STILL_READING)
                yield chunk
            if watch.fired:  # the watchdog's shutdown can look like the end of a close-delimited body
                raise deadline.exceeded(self._provider, STILL_READING)
        except httpx2.TransportError as exc:
            if watch.fired or deadline.expired():
                raise deadline.exceeded(self._provider, STILL_READING) from exc
            raise
        finally:
            self.release()

    def release(self) -> None:
        """Stop watching: the body has been read (or the stream is being closed)."""
        watch, self._watch = self._watch, None
        if watch is not None:
            WATCHDOG.release(watch)

    def close(self) -> None:
        self.release()  # first: once closed, the connection may serve another request
        self._inner.close()


class PendingSend:
    """A request sent through ``client`` whose response has not come: what the watchdog cuts when its
    headers are still trickling in at the deadline. Only then is the pool searched, for the HTTP/1.1
    connection carrying this request (the one whose request shares its ``extensions``); its socket
    is shut down. The names read are httpx2's and httpcore2's private ones, so on any other shape
    (another transport, another release) nothing is done and no error is raised: each read is still
    bounded by its timeout, cut to the time left."""

    __slots__ = ("_client", "_request")

    def __init__(self, client: httpx2.Client, request: httpx2.Request) -> None:
        self._client, self._request = client, request

    def abort(self) -> None:
        import socket

        transport_for = getattr(self._client, "_transport_for_url", None)
        pool = getattr(transport_for(self._request.url), "_pool", None) if callable(transport_for) else None
        extensions = self._request.extensions
        for waiting in list(getattr(pool, "_requests", None) or ()):
            if getattr(getattr(waiting, "request", None), "extensions", None) is not extensions:
                continue
            connection: Any = getattr(getattr(waiting, "connection", None), "_connection", None)
            if type(connection).__name__ != "HTTP11Connection":
                return  # HTTP/2 carries other requests; a connection not yet made has no socket
            stream = getattr(connection, "_network_stream", None)
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            return


class AsyncDeadlineStream(httpx2.AsyncByteStream):
    """As :class:`DeadlineStream`, with the event loop's timer (:func:`providers._cutoff.cut_at`) in
    place of the watchdog thread."""

    def __init__(self, response: httpx2.Response, deadline: Deadline, provider: str) -> None:
        self._inner: Any = response.stream
        self._response, self._deadline, self._provider = response, deadline, provider
        self._cut: Cut | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        deadline = self._deadline
        ends = deadline.ends
        response = self._response
        cut = self._cut = cut_at(max(deadline.left(), 0.0), lambda: shut_down(response))
        try:
            async for chunk in self._inner:
                if time.monotonic() > ends:
                    raise deadline.exceeded(self._provider, STILL_READING)
                yield chunk
            if cut.fired:  # the shutdown can look like the end of a close-delimited body
                raise deadline.exceeded(self._provider, STILL_READING)
        except httpx2.TransportError as exc:
            if cut.fired or deadline.expired():
                raise deadline.exceeded(self._provider, STILL_READING) from exc
            raise
        finally:
            self._stop()

    def _stop(self) -> None:
        cut, self._cut = self._cut, None
        if cut is not None:
            cut.stop()

    async def aclose(self) -> None:
        self._stop()
        await self._inner.aclose()


async def cut_off(deadline: Deadline, provider: str, exchange: Awaitable[T]) -> T:
    """``await exchange`` (sending a request, receiving its reply), its task cancelled at the deadline,
    which then raises the deadline's error: this bounds what no read timeout can, a reply whose
    headers or body trickle in a few bytes within each read's timeout (see :mod:`providers._cutoff`)."""
    cut = cancel_at(max(deadline.left(), 0.0))
    try:
        result = await exchange
    except BaseException as exc:
        if cut.stop():
            raise deadline.exceeded(provider, STILL_READING) from exc
        raise
    cut.stop()
    return result


def numeric_timeout(timeout: object) -> float | None:
    """A model ``timeout`` given as a number (a total limit too), ``None`` for an ``httpx2.Timeout``."""
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    return None
