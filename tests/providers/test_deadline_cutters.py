"""The two things that cut an exchange at its deadline, on their own: the sync watchdog thread
(:mod:`providers._watchdog`, and how it finds a sync SDK client's exchange:
:mod:`providers._sdk_watch`) and the event loop's cuts (:mod:`providers._cutoff`).

Ordered by events, not clocks: a cut that is due fires when its timer runs, and a blocked ``recv`` on
a real socket pair shows the shutdown (it returns ``b""``); the bounded waits only guard against a hang.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
import time
import weakref
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest

from providers._cutoff import cancel_at, cut_at
from providers._deadline import Deadline, DeadlineStream, PendingSend
from providers._sdk_watch import watched_exchange
from providers._watchdog import WATCHDOG, Watch, Watchdog

GUARD = 10.0
"""Seconds before a wait that should end at once is taken as a hang."""


class _Stream:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self._sock if name == "socket" else None


class _Response:
    """What ``shut_down`` reads of an ``httpx2.Response``: its HTTP version and its socket."""

    def __init__(self, sock: socket.socket, http_version: str = "HTTP/1.1") -> None:
        self.http_version = http_version
        self.extensions = {"network_stream": _Stream(sock)}


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(GUARD)
    with ours, theirs:
        yield ours, theirs


def _pairs(count: int) -> list[tuple[socket.socket, socket.socket]]:
    made = [socket.socketpair() for _ in range(count)]
    for ours, _ in made:
        ours.settimeout(GUARD)
    return made


def test_the_watchdog_shuts_down_a_read_past_its_deadline(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    watchdog = Watchdog()
    watch = watchdog.watch(time.monotonic() - 1, _Response(ours))
    assert ours.recv(1) == b"", "the blocked read ends: the socket was shut down"
    assert watch.fired


def test_a_released_read_is_never_shut_down() -> None:
    """Released before its deadline, a response is left alone, even when the watchdog then fires for
    another one (its connection may already serve another request)."""
    (kept, kept_peer), (cut, cut_peer) = _pairs(2)
    try:
        watchdog = Watchdog()
        now = time.monotonic()
        released = watchdog.watch(now + 0.05, _Response(kept))
        watchdog.release(released)
        watchdog.watch(now + 0.1, _Response(cut))  # when it fires, the released one is due too
        assert cut.recv(1) == b""
        kept_peer.sendall(b"x")
        assert kept.recv(1) == b"x", "the released socket still works"
        assert not released.fired
    finally:
        for sock in (kept, kept_peer, cut, cut_peer):
            sock.close()


def test_an_earlier_deadline_wakes_the_sleeping_watchdog(pair: tuple[socket.socket, socket.socket]) -> None:
    """The thread sleeps until the earliest deadline (an hour here); a new, earlier one wakes it."""
    ours, _ = pair
    watchdog = Watchdog()
    (late, late_peer) = socket.socketpair()
    with late, late_peer:
        far = watchdog.watch(time.monotonic() + 3600, _Response(late))
        watchdog.watch(time.monotonic() - 1, _Response(ours))
        assert ours.recv(1) == b""
        assert not far.fired
        watchdog.release(far)


def test_an_http2_connection_is_not_shut_down(pair: tuple[socket.socket, socket.socket]) -> None:
    """It carries other exchanges too: there the read's own (cut) timeout ends the read."""
    ours, theirs = pair
    Watch(time.monotonic() - 1, _Response(ours, "HTTP/2"), None).cut()
    theirs.sendall(b"y")
    assert ours.recv(1) == b"y"


def test_a_task_cut_at_its_deadline_is_told_so() -> None:
    async def main() -> bool:
        cut = cancel_at(0.0)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.Event().wait()
        return cut.stop()

    assert asyncio.run(main()) is True


def test_another_cancellation_stays_a_cancellation() -> None:
    """A task cancelled by its caller before the deadline: the cut did not fire, nothing is converted."""

    async def main() -> bool:
        cut = cancel_at(3600)
        task: Any = asyncio.current_task()  # ``cancelling``/``uncancel``: Python 3.11+
        asyncio.get_running_loop().call_soon(task.cancel)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped = cut.stop()
            assert task.cancelling() == 1, "the caller's cancellation is left as it was"
            task.uncancel()
            return stopped
        raise AssertionError("not cancelled")

    if sys.version_info < (3, 11):
        pytest.skip("Task.cancelling() is Python 3.11+")
    assert asyncio.run(main()) is False


def test_one_timer_serves_many_cuts_and_a_stopped_one_never_fires() -> None:
    async def main() -> list[str]:
        fired: list[str] = []
        stopped = cut_at(0.0, lambda: fired.append("stopped"))
        stopped.stop()
        later = cut_at(3600, lambda: fired.append("later"))
        done = asyncio.Event()

        def due() -> None:
            fired.append("due")
            done.set()

        cut_at(0.0, due)
        await asyncio.wait_for(done.wait(), GUARD)
        assert not later.stop()
        return fired

    assert asyncio.run(main()) == ["due"]


def test_no_loop_outlives_its_run_for_a_cut() -> None:
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def main() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        cancel_at(3600).stop()

    asyncio.run(main())
    asyncio.run(main())  # the module's cache now names the second loop
    gc.collect()
    assert loops[0]() is None


def test_outside_any_task_nothing_is_cancelled() -> None:
    """Called from a loop callback (no task runs): a cut that never fires, and no error."""

    async def main() -> list[bool]:
        stopped: list[bool] = []
        done = asyncio.Event()

        def callback() -> None:
            stopped.append(cancel_at(0.0).stop())
            done.set()

        asyncio.get_running_loop().call_soon(callback)
        await asyncio.wait_for(done.wait(), GUARD)
        await asyncio.sleep(0)
        return stopped

    assert asyncio.run(main()) == [False]


# ------------------------------------------------------------------ a pending send on an unknown shape


class HTTP11Connection:
    """Named as httpcore2's: the one kind of connection a pending send shuts down."""

    def __init__(self, stream: object) -> None:
        if stream is not None:
            self._network_stream = stream


def test_a_pending_send_shuts_down_its_own_http11_connection(
    pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours, _ = pair
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200)))
    request = client.build_request("POST", "http://t.example/v1/x")
    other = SimpleNamespace(request=httpx2.Request("GET", "http://t.example/"), connection=None)
    mine = SimpleNamespace(request=request, connection=SimpleNamespace(_connection=HTTP11Connection(_Stream(ours))))
    pool = SimpleNamespace(_requests=[other, mine])
    monkeypatch.setattr(client, "_transport_for_url", lambda url: SimpleNamespace(_pool=pool))
    PendingSend(client, request).abort()
    assert ours.recv(1) == b""  # shut down: the blocked read returns at once


@pytest.mark.parametrize(
    "shape",
    ["no pool", "requests of another shape", "an HTTP11Connection without a stream", "an HTTP/2 connection"],
)
def test_a_pending_send_on_another_shape_is_left_alone(
    shape: str, pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx2's and httpcore2's private names are read only when a deadline fires; on any other shape
    the send is left to its cut read timeout, quietly (the watchdog thread serves every request)."""
    ours, theirs = pair
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200)))
    request = client.build_request("POST", "http://t.example/v1/x")
    entries: dict[str, Any] = {
        "no pool": None,
        "requests of another shape": SimpleNamespace(_requests=[object(), SimpleNamespace(request=None)]),
        "an HTTP11Connection without a stream": SimpleNamespace(
            _requests=[SimpleNamespace(request=request, connection=SimpleNamespace(_connection=HTTP11Connection(None)))]
        ),
        "an HTTP/2 connection": SimpleNamespace(
            _requests=[SimpleNamespace(request=request, connection=SimpleNamespace(_connection=_Stream(ours)))]
        ),
    }
    monkeypatch.setattr(client, "_transport_for_url", lambda url: SimpleNamespace(_pool=entries[shape]))
    PendingSend(client, request).abort()
    theirs.sendall(b"x")
    assert ours.recv(1) == b"x", "the connection was left as it was"


def test_a_pending_send_through_a_client_of_another_shape_is_left_alone() -> None:
    request = httpx2.Request("POST", "http://t.example/v1/x")
    PendingSend(SimpleNamespace(), request).abort()  # type: ignore[arg-type]  # no _transport_for_url
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200)))
    PendingSend(client, client.build_request("POST", "http://t.example/v1/x")).abort()  # a transport with no pool


# ------------------------------------------------------------------ a sync SDK client's exchange


def _sdk_over(client: httpx2.Client) -> SimpleNamespace:
    """What :func:`watched_exchange` reads of a sync SDK client: its ``httpx2.Client``."""
    return SimpleNamespace(_client=client)


def test_a_sync_sdk_exchange_is_watched_from_its_request_to_its_body() -> None:
    """The SDK's own request is the pending send; its response's body is read under the deadline."""
    seen: list[str] = []
    client = httpx2.Client(
        transport=httpx2.MockTransport(lambda request: httpx2.Response(200, content=b"{}")),
        event_hooks={"request": [lambda request: seen.append("user's hook")]},
    )
    deadline = Deadline(3600)
    with watched_exchange(_sdk_over(client), deadline, "p") as exchange:
        assert exchange is not None
        response = client.send(client.build_request("POST", "http://t.example/v1/x"), stream=True)
        (watch,) = exchange.watches
        assert isinstance(watch.pending, PendingSend) and watch.response is response
        assert isinstance(response.stream, DeadlineStream)
        assert response.read() == b"{}"
    assert seen == ["user's hook"], "the client's own hooks are kept and run"
    assert not exchange.fired


def test_the_sdk_hooks_are_added_once_and_do_nothing_outside_an_exchange() -> None:
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, content=b"{}")))
    for _ in range(2):
        with watched_exchange(_sdk_over(client), Deadline(3600), "p"):
            pass
    assert len(client.event_hooks["request"]) == 1 and len(client.event_hooks["response"]) == 1
    response = client.send(client.build_request("POST", "http://t.example/v1/x"), stream=True)
    assert not isinstance(response.stream, DeadlineStream), "no deadline here: the body is left as it is"
    response.close()


def test_an_unanswered_sdk_request_is_no_longer_watched_after_its_exchange() -> None:
    """A send that failed leaves nothing in the watchdog (it would be cut at the deadline, much later)."""

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    client = httpx2.Client(transport=httpx2.MockTransport(refuse))
    with (
        pytest.raises(httpx2.ConnectError),
        watched_exchange(_sdk_over(client), Deadline(3600), "p") as exchange,
    ):
        client.send(client.build_request("POST", "http://t.example/v1/x"))
    assert exchange is not None
    (watch,) = exchange.watches
    assert watch not in WATCHDOG._watched


def test_a_client_of_another_kind_is_not_hooked() -> None:
    """A legacy ``httpx.Client`` (or none): its reads keep their own, cut, timeouts."""
    httpx = pytest.importorskip("httpx")
    legacy = httpx.Client()
    try:
        for sdk in (_sdk_over(legacy), SimpleNamespace()):
            with watched_exchange(sdk, Deadline(3600), "p") as exchange:
                assert exchange is None
        assert legacy.event_hooks == {"request": [], "response": []}
    finally:
        legacy.close()
