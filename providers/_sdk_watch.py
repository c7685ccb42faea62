"""What a sync official SDK client is sending, found for whoever may have to cut it: the SDK builds
and sends its own request, so it is found through the SDK's own ``httpx2.Client``, by event hooks.

The hooks are added once to that client and do nothing unless this thread is in an exchange of
ours that needs them (:func:`watched_exchange`):

- under a deadline, the request hook registers the request with the watchdog as a pending send, so
  a reply whose headers trickle in has its connection shut down at the deadline
  (:class:`~providers._deadline.PendingSend`); the response hook hands the response to the watch and
  puts its body behind a :class:`~providers._deadline.DeadlineStream`, so an error body the SDK
  reads itself (to build its status error) is cut at the deadline too, as is a body we read later;
- in a worker thread of the async bridge (:mod:`providers._bridge`), both hooks tell the bridge's
  abort what to cut when the async caller is cancelled.

A client of another kind (a legacy ``httpx.Client`` passed to the SDK) gets no hooks: its reads stay
bounded each by its timeout, cut to the time left.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from ._bridge import current_abort
from ._deadline import Deadline, DeadlineStream, PendingSend
from ._watchdog import WATCHDOG, Watch

__all__ = ["SdkExchange", "watched_exchange"]

_local = threading.local()
_install_lock = threading.Lock()


class SdkExchange:
    """One exchange through an SDK client, on this thread: the watches it made under a deadline (one
    per request the SDK sent: a redirect or an auth round makes another), and the bridge's abort."""

    __slots__ = ("abort", "client", "deadline", "provider", "watches")

    def __init__(self, client: httpx2.Client, deadline: Deadline | None, provider: str, abort: Any) -> None:
        self.client, self.deadline, self.provider, self.abort = client, deadline, provider, abort
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
    if exchange is None:
        return
    pending = PendingSend(exchange.client, request)
    if exchange.deadline is not None:
        exchange.watches.append(WATCHDOG.watch(exchange.deadline.ends, pending=pending))
    if exchange.abort is not None:
        exchange.abort.watch_pending(pending)


def _on_response(response: httpx2.Response) -> None:
    exchange: SdkExchange | None = getattr(_local, "exchange", None)
    if exchange is None:
        return
    if exchange.abort is not None:
        exchange.abort.watch(response)
    deadline, watches = exchange.deadline, exchange.watches
    if deadline is not None and watches and watches[-1].response is None:
        watch = watches[-1]
        watch.response = response
        response.stream = DeadlineStream(response, deadline, exchange.provider, watch)


def _hooked(client: httpx2.Client) -> bool:
    """Add the hooks to ``client`` unless they are there; False for a client they cannot serve."""
    if not isinstance(client, httpx2.Client):
        return False
    if _on_request in client.event_hooks.get("request", ()):
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
def watched_exchange(sdk: Any, deadline: Deadline | None, provider: str) -> Iterator[SdkExchange | None]:
    """Watch what ``sdk`` (a sync SDK client) sends on this thread until the ``with`` block ends, for
    ``deadline`` and for the bridge's abort if this is a bridge's worker; ``None`` when there is
    nothing to watch for, or its HTTP client cannot be watched."""
    abort = current_abort()
    client = getattr(sdk, "_client", None)
    if (deadline is None and abort is None) or client is None or not _hooked(client):
        yield None
        return
    exchange = SdkExchange(client, deadline, provider, abort)
    outer = getattr(_local, "exchange", None)
    _local.exchange = exchange
    try:
        yield exchange
    finally:
        _local.exchange = outer
        exchange.release()
