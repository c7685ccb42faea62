"""Retries run by tenacity: imported at the first retryable failure only, the user's own strategies
or whole policy, one deadline across the attempts, ``Retry-After`` first, each attempt's connection
back in the pool, a controller of its own for every request, and tools that never run twice."""

from __future__ import annotations

import asyncio
import contextvars
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest
import tenacity

from chatclient import ChatClient, Prompt, tool
from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    BadRequestError,
    DeadlineExceeded,
    RateLimitError,
    ServerError,
)
from providers._retry import RetryPolicy
from providers._transport import ProviderHttp
from providers.openai import OpenAIChatModel

MODES = ["call", "acall", "stream", "astream"]


def _http(handler: Any, retry: RetryPolicy, **clients: Any) -> ProviderHttp:
    if not any(name.endswith("client") for name in clients):
        transport = httpx2.MockTransport(handler)
        clients = {"http_client": httpx2.Client(transport=transport),
                   "async_http_client": httpx2.AsyncClient(transport=transport)}  # fmt: skip
    return ProviderHttp(
        provider="t", base_url="http://t.example", headers={}, error_details=lambda body: None, retry=retry, **clients
    )


def _post(http: ProviderHttp, mode: str, body: Any = None) -> Any:
    """One request through ``http`` in ``mode`` (a stream's body read whole), its JSON."""
    if mode == "call":
        return http.post_json("/x", body or {})[0]
    if mode == "acall":
        return asyncio.run(http.apost_json("/x", body or {}))[0]
    if mode == "stream":
        with http.stream("/x", body or {}) as response:
            return json.loads(response.read())

    async def astream() -> Any:
        async with http.astream("/x", body or {}) as response:
            return json.loads(await response.aread())

    return asyncio.run(astream())


class Statuses:
    """Answers with each status in turn (``{"ok": n}`` with the request's number on a 200)."""

    def __init__(self, *statuses: int, headers: dict[str, str] | None = None) -> None:
        self.statuses = list(statuses)
        self.headers = headers or {}
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        status = self.statuses.pop(0)
        if status == 200:
            return httpx2.Response(200, json={"ok": self.requests})
        return httpx2.Response(status, headers=self.headers, json={"error": {"message": f"status {status}"}})


@pytest.fixture
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait a retry asks for, recorded instead of slept."""
    waits: list[float] = []

    async def asleep(seconds: float, *args: Any) -> None:
        waits.append(seconds)

    monkeypatch.setattr(time, "sleep", waits.append)
    monkeypatch.setattr(asyncio, "sleep", asleep)
    return waits


# ------------------------------------------------------------------ imported at the first failure only

LAZY = """
import sys, httpx2
from providers._transport import ProviderHttp
from providers._retry import RetryPolicy
statuses = [200, 503, 200]
def handler(request):
    return httpx2.Response(statuses.pop(0), json={"ok": True})
http = ProviderHttp(provider="t", base_url="http://t.example", headers={}, error_details=lambda body: None,
                    http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                    retry=RetryPolicy(initial_backoff=0))
http.post_json("/x", {})
print("tenacity" in sys.modules)
http.post_json("/x", {})
print("tenacity" in sys.modules)
"""


def test_tenacity_is_imported_at_the_first_retryable_failure_and_not_before() -> None:
    result = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["False", "True"]


# ------------------------------------------------------------------ the user's strategies and policy


@pytest.mark.parametrize("mode", MODES)
def test_a_stop_strategy_replaces_max_retries(mode: str, no_waiting: list[float]) -> None:
    handler = Statuses(503, 503, 503, 200)
    http = _http(handler, RetryPolicy(max_retries=0, stop=tenacity.stop_after_attempt(4)))
    assert _post(http, mode) == {"ok": 4}
    assert handler.requests == 4


@pytest.mark.parametrize("mode", MODES)
def test_a_wait_strategy_sets_the_pause_but_retry_after_comes_first(mode: str, no_waiting: list[float]) -> None:
    handler = Statuses(503, 429, 200)
    handler.headers = {}
    policy = RetryPolicy(wait=tenacity.wait_fixed(0.125))
    http = _http(lambda request: _retry_after_on_429(handler, request), policy)
    assert _post(http, mode) == {"ok": 3}
    assert no_waiting == [0.125, 2.0]


def _retry_after_on_429(handler: Statuses, request: httpx2.Request) -> httpx2.Response:
    response = handler(request)
    if response.status_code == 429:
        response.headers["retry-after"] = "2"
    return response


def test_a_retry_strategy_narrows_what_is_retried(no_waiting: list[float]) -> None:
    policy = RetryPolicy(retry=tenacity.retry_if_exception_type(RateLimitError), initial_backoff=0)
    assert _post(_http(Statuses(429, 200), policy), "call") == {"ok": 2}
    handler = Statuses(503, 200)
    with pytest.raises(ServerError):
        _post(_http(handler, policy), "call")
    assert handler.requests == 1


def test_a_bad_request_is_never_retried_whatever_the_strategy_says(no_waiting: list[float]) -> None:
    handler = Statuses(400, 200)
    policy = RetryPolicy(retry=tenacity.retry_always, stop=tenacity.stop_never)
    with pytest.raises(BadRequestError):
        _post(_http(handler, policy), "call")
    assert handler.requests == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_whole_retrying_policy_gives_its_strategies_and_hooks(mode: str, no_waiting: list[float]) -> None:
    seen: list[int] = []
    policy = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(3),
        wait=tenacity.wait_fixed(0.25),
        before_sleep=lambda state: seen.append(state.attempt_number),
    )
    handler = Statuses(502, 503, 200)
    assert _post(_http(handler, RetryPolicy(retrying=policy)), mode) == {"ok": 3}
    assert seen == [1, 2]
    assert no_waiting == [0.25, 0.25]
    handler = Statuses(502, 503, 504, 200)
    with pytest.raises(ServerError, match="504"):
        _post(_http(handler, RetryPolicy(retrying=policy)), mode)
    assert handler.requests == 3


# ------------------------------------------------------------------ one deadline across the attempts


@pytest.mark.parametrize("mode", MODES)
def test_a_wait_that_would_end_past_the_deadline_raises_deadline_exceeded(mode: str, no_waiting: list[float]) -> None:
    handler = Statuses(429, 200, headers={"retry-after": "30"})
    policy = RetryPolicy(deadline=20, stop=tenacity.stop_never)
    with pytest.raises(DeadlineExceeded) as raised:
        _post(_http(handler, policy), mode)
    assert isinstance(raised.value, APITimeoutError)
    assert raised.value.error_type == "deadline_exceeded" and not raised.value.retryable
    assert isinstance(raised.value.__cause__, RateLimitError)
    assert handler.requests == 1 and no_waiting == []


# ------------------------------------------------------------------ every attempt's connection released


class _Failing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.server.lock:
            self.server.ports.append(self.client_address[1])
            failing = len(self.server.ports) <= self.server.failures
        body = json.dumps({"error": {"message": "busy"}} if failing else {"ok": len(self.server.ports)}).encode()
        self.send_response(503 if failing else 200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, failures: int) -> None:
        super().__init__(("127.0.0.1", 0), _Failing)
        self.failures = failures
        self.ports: list[int] = []
        self.lock = threading.Lock()


@contextmanager
def _failing_server(failures: int) -> Iterator[_Server]:
    server = _Server(failures)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("limit", [600.0, httpx2.Timeout(30.0, pool=5.0)], ids=["deadline", "per-attempt"])
@pytest.mark.parametrize("mode", MODES)
def test_every_failed_attempt_gives_its_connection_back_to_a_one_connection_pool(
    mode: str, limit: float | httpx2.Timeout, no_waiting: list[float]
) -> None:
    """N failures then a success through a pool of one connection: a failed attempt that kept its
    connection would leave the next one waiting for the pool until its pool timeout (a numeric model
    timeout is a deadline, watched per exchange; an ``httpx2.Timeout`` is not)."""
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    timeout = httpx2.Timeout(30.0, pool=5.0)
    with _failing_server(failures=4) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        policy = RetryPolicy(max_retries=4, initial_backoff=0)
        if mode in ("call", "stream"):
            with httpx2.Client(limits=limits, timeout=timeout) as client:
                http = _http(None, policy, http_client=client, timeout=limit)
                http.base_url = url
                assert _post(http, mode) == {"ok": 5}
        else:

            async def run() -> Any:
                async with httpx2.AsyncClient(limits=limits, timeout=timeout) as client:
                    http = _http(None, policy, async_http_client=client, timeout=limit)
                    http.base_url = url
                    if mode == "acall":
                        return (await http.apost_json("/x", {}))[0]
                    async with http.astream("/x", {}) as response:
                        return json.loads(await response.aread())

            assert asyncio.run(run()) == {"ok": 5}
        assert len(server.ports) == 5
        assert len(set(server.ports)) == 1, "each retry reused the one connection, given back after each failure"


# ------------------------------------------------------------------ no retry state shared between requests

CALLS = 300
CALL_ID: contextvars.ContextVar[int] = contextvars.ContextVar("call_id")


def _failures_of(call: int) -> int:
    return call % 4


async def test_300_concurrent_calls_with_failures_mixed_in_keep_their_own_retry_state() -> None:
    """All 300 first attempts are in flight together (a barrier holds their replies until the last
    has arrived); each call then fails its own number of times (0-3, 429s and 503s). One shared
    ``tenacity.Retrying`` is given as the policy: every call must see its own attempts 1..n, and get
    its own reply after exactly n + 1 requests."""
    arrived: list[int] = []
    all_in = asyncio.Event()  # a barrier (``asyncio.Barrier`` is 3.11+)
    attempts: dict[int, int] = {}
    slept: dict[int, list[int]] = {}

    async def handler(request: httpx2.Request) -> httpx2.Response:
        call = json.loads(request.content)["call"]
        attempts[call] = attempts.get(call, 0) + 1
        if attempts[call] == 1:
            arrived.append(call)
            if len(arrived) == CALLS:
                all_in.set()
            await all_in.wait()
        if attempts[call] <= _failures_of(call):
            status = 429 if call % 2 else 503
            return httpx2.Response(status, json={"error": {"message": f"{call} busy"}})
        return httpx2.Response(200, json={"call": call, "attempts": attempts[call]})

    shared = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(4),
        wait=tenacity.wait_none(),
        before_sleep=lambda state: slept.setdefault(CALL_ID.get(), []).append(state.attempt_number),
    )
    http = _http(None, RetryPolicy(retrying=shared),
                 async_http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))  # fmt: skip

    async def one(call: int) -> Any:
        CALL_ID.set(call)
        return (await http.apost_json("/x", {"call": call}))[0]

    replies = await asyncio.gather(*(one(call) for call in range(CALLS)))
    assert replies == [{"call": call, "attempts": _failures_of(call) + 1} for call in range(CALLS)]
    assert {call: slept.get(call, []) for call in range(CALLS)} == {
        call: list(range(1, _failures_of(call) + 1)) for call in range(CALLS)
    }


def test_300_concurrent_sync_calls_with_failures_mixed_in_keep_their_own_retry_state() -> None:
    """As above, on threads: tenacity keeps a controller's state per thread, so sharing would not show
    here; what would is a counter or a wait kept on the transport instead of on the request."""
    barrier = threading.Barrier(CALLS)
    lock = threading.Lock()
    attempts: dict[int, int] = {}

    def handler(request: httpx2.Request) -> httpx2.Response:
        call = json.loads(request.content)["call"]
        with lock:
            attempts[call] = attempts.get(call, 0) + 1
            count = attempts[call]
        if count == 1:
            barrier.wait(timeout=60)
        if count <= _failures_of(call):
            return httpx2.Response(503, json={"error": {"message": "busy"}})
        return httpx2.Response(200, json={"call": call, "attempts": count})

    http = _http(handler, RetryPolicy(max_retries=3, initial_backoff=0))
    with ThreadPoolExecutor(max_workers=CALLS) as pool:
        replies = list(pool.map(lambda call: http.post_json("/x", {"call": call})[0], range(CALLS)))
    assert replies == [{"call": call, "attempts": _failures_of(call) + 1} for call in range(CALLS)]


# ------------------------------------------------------------------ tools never run again


def _chat(body: dict[str, Any], stream: bool) -> httpx2.Response:
    if not stream:
        return httpx2.Response(200, json=body)
    message, finish = body["choices"][0]["message"], body["choices"][0]["finish_reason"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    chunks = [
        {"id": body["id"], "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"id": body["id"], "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]  # fmt: skip
    content = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content.encode())


TOOL_ROUND = {
    "id": "c1",
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "book", "arguments": "{}"}}],
            },
        }
    ],
}
ANSWER = {
    "id": "c2",
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "booked"}}],
}


@pytest.mark.parametrize("mode", MODES)
def test_a_retried_round_never_runs_the_tools_of_the_round_before_again(mode: str, no_waiting: list[float]) -> None:
    ran: list[str] = []

    @tool(description="Book it")
    def book() -> str:
        ran.append("book")
        return "done"

    stream = "stream" in mode
    replies = iter([_chat(TOOL_ROUND, stream), httpx2.Response(503, json={"error": {"message": "busy"}}),
                    httpx2.Response(429, json={"error": {"message": "slow"}}), _chat(ANSWER, stream)])  # fmt: skip
    transport = httpx2.MockTransport(lambda request: next(replies))
    model = OpenAIChatModel("m", api_key="k", http_client=httpx2.Client(transport=transport),
                            async_http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip
    spec = ChatClient.create(model).prompt("book it").tools(book)
    if mode == "call":
        text = spec.call().content()
    elif mode == "acall":
        text = asyncio.run(spec.acall().content())
    elif mode == "stream":
        text = "".join(spec.stream().content())
    else:

        async def collect() -> str:
            return "".join([part async for part in spec.astream().content()])

        text = asyncio.run(collect())
    assert text == "booked"
    assert ran == ["book"]


# ------------------------------------------------------------------ never a retry once a byte reached the caller


class _CutStream(httpx2.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        yield b'data: {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
        raise httpx2.ReadError("connection reset by peer")


class _AsyncCutStream(httpx2.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'data: {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
        raise httpx2.ReadError("connection reset by peer")


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_stream_cut_after_its_first_bytes_is_never_retried_whatever_the_strategies_say(mode: str) -> None:
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        body = _CutStream() if mode == "stream" else _AsyncCutStream()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    transport = httpx2.MockTransport(handler)
    policy = RetryPolicy(stop=tenacity.stop_never, retry=tenacity.retry_always, wait=tenacity.wait_none())
    model = OpenAIChatModel("m", api_key="k", retry=policy, http_client=httpx2.Client(transport=transport),
                            async_http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip
    received: list[Any] = []

    async def astream() -> None:
        async for event in model.astream(Prompt("hi")):
            received.append(event)

    with pytest.raises(APIConnectionError):
        if mode == "stream":
            received.extend(model.stream(Prompt("hi")))
        else:
            asyncio.run(astream())
    assert len(requests) == 1
