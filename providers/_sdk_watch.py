"""The watchdog over a sync official SDK client's exchange: the SDK builds and sends its own request,
so the watchdog finds it through the SDK's own ``httpx2.Client``, by event hooks.

The hooks are added once to that client (they do nothing unless this thread is in a deadline-bound
``SdkTransport._send``). The request hook registers the request as the exchange's pending send, so a
reply whose headers trickle in has its connection shut down at the deadline
(:class:`~providers._deadline.PendingSend`); the response hook hands the response to the watch and
puts its body behind a :class:`~providers._deadline.DeadlineStream`, so an error body the SDK reads
itself (to build its status error) is cut at the deadline too, as is a body we read afterwards.

A client of another kind (a legacy ``httpx.Client`` passed to the SDK) gets no hooks: its reads stay
bounded each by its timeout, cut to the time left.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from ._deadline import Deadline, DeadlineStream, PendingSend
from ._watchdog import WATCHDOG, Watch

__all__ = ["SdkExchange", "watched_exchange"]

_local = threading.local()
_install_lock = threading.Lock()


class SdkExchange:
    """One deadline-bound exchange through an SDK client, on this thread: the watches it made (one
    per request the SDK sent: a redirect or an auth round makes another)."""

    __slots__ = ("client", "deadline", "provider", "watches")

    def __init__(self, client: httpx2.Client, deadline: Deadline, provider: str) -> None:
        self.client, self.deadline, self.provider = client, deadline, provider
        self.watches: list[Watch] = []

    @property
    def fired(self) -> bool:
        """Whether the watchdog cut any of its requests."""
        return any(watch.fired for watch in self.watches)

    def release(self) -> None:
        """Stop watching what no response's body holds (a failed exchange, an unanswered request)."""
        for watch in self.watches:
            if watch.response is None:
                WATCHDOG.release(watch)


def _on_request(request: httpx2.Request) -> None:
    exchange: SdkExchange | None = getattr(_local, "exchange", None)
    if exchange is not None:
        pending = PendingSend(exchange.client, request)
        exchange.watches.append(WATCHDOG.watch(exchange.deadline.ends, pending=pending))


def _on_response(response: httpx2.Response) -> None:
    exchange: SdkExchange | None = getattr(_local, "exchange", None)
    if exchange is None or not exchange.watches or exchange.watches[-1].response is not None:
        return
    watch = exchange.watches[-1]
    watch.response = response
    response.stream = DeadlineStream(response, exchange.deadline, exchange.provider, watch)


def _hooked(client: httpx2.Client) -> bool:
    """Add the hooks to ``client`` unless they are there; False for a client they cannot serve."""
    if not isinstance(client, httpx2.Client):
        return False
    hooks = client.event_hooks
    if _on_request in hooks.get("request", ()):
        return True
    with _install_lock:
        hooks = client.event_hooks
        if _on_request not in hooks.get("request", ()):
            client.event_hooks = {
                "request": [*hooks.get("request", ()), _on_request],
                "response": [*hooks.get("response", ()), _on_response],
            }
    return True


@contextmanager
def watched_exchange(sdk: Any, deadline: Deadline, provider: str) -> Iterator[SdkExchange | None]:
    """Watch, until the ``with`` block ends, what ``sdk`` (a sync SDK client) sends on this thread;
    ``None`` when its HTTP client cannot be watched."""
    client = getattr(sdk, "_client", None)
    if client is None or not _hooked(client):
        yield None
        return
    exchange = SdkExchange(client, deadline, provider)
    outer = getattr(_local, "exchange", None)
    _local.exchange = exchange
    try:
        yield exchange
    finally:
        _local.exchange = outer
        exchange.release()
