"""Cancelling ``astream()`` over a sync official SDK client: ``CancelledError``, and the stream closed.

A loopback server sends the first events of a stream and then holds it open, as a slow model does,
until the client goes away; it records when it sees the connection closed. The consumer is
cancelled while the worker thread is blocked reading the next event.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from chatclient import Prompt
from chatclient.events import TextDelta

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

HOLD = 30.0
"""Seconds the server holds a stream open at most, so a failing test never hangs."""

_OPENING: dict[str, list[tuple[str | None, dict[str, Any]]]] = {
    "completions": [
        (None, {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
        (None, {"id": "chatcmpl-1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
    ],
    "responses": [
        ("response.created", {"type": "response.created", "response": {"id": "resp_1", "model": "m"}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hel"}),
    ],
    "messages": [
        (
            "message_start",
            {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}}},
        ),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        ),
    ],
}


class _HoldingServer:
    def __init__(self) -> None:
        self.closed = threading.Event()
        self.port = 0


@contextmanager
def holding_server() -> Iterator[_HoldingServer]:
    state = _HoldingServer()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            wire = self.path.rstrip("/").rsplit("/", 1)[-1]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for name, data in _OPENING[wire]:
                text = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                payload = text.encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
            self.connection.settimeout(HOLD)
            try:
                if self.rfile.read(1) == b"":  # the client shut the connection down
                    state.closed.set()
            except OSError:
                state.closed.set()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _chat(base: str) -> Any:
    from providers.openai import OpenAIChatModel

    return OpenAIChatModel("m", client=openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0))


def _responses(base: str) -> Any:
    from providers.openai_responses import OpenAIResponsesChatModel

    return OpenAIResponsesChatModel("m", client=openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0))


def _anthropic(base: str) -> Any:
    from providers.anthropic import AnthropicChatModel

    return AnthropicChatModel("m", client=anthropic.Anthropic(base_url=base, api_key="k", max_retries=0))


@pytest.mark.parametrize("make_model", [_chat, _responses, _anthropic], ids=["chat", "responses", "anthropic"])
def test_cancelled_astream_over_a_sync_sdk_client_raises_cancelled_and_closes_the_stream(
    make_model: Callable[[str], Any],
) -> None:
    with holding_server() as server:
        model = make_model(f"http://127.0.0.1:{server.port}")

        async def scenario() -> None:
            got_text = asyncio.Event()

            async def consume() -> None:
                async for event in model.astream(Prompt("hi")):
                    if isinstance(event, TextDelta):
                        got_text.set()  # the worker now blocks on the held stream

            task = asyncio.create_task(consume())
            waiter = asyncio.create_task(got_text.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            assert not task.done(), task.exception()  # the stream failed instead of waiting
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(server.closed.wait, HOLD), "the server never saw the stream closed"

        asyncio.run(scenario())


def test_an_astream_closed_early_closes_the_stream_too() -> None:
    with holding_server() as server:
        model = _chat(f"http://127.0.0.1:{server.port}")

        async def scenario() -> None:
            events = model.astream(Prompt("hi"))
            async for event in events:
                if isinstance(event, TextDelta):
                    break
            await events.aclose()
            assert await asyncio.to_thread(server.closed.wait, HOLD)

        asyncio.run(scenario())


def test_the_bridge_hands_over_events_and_errors_and_closes_the_iterator_in_its_own_thread() -> None:
    from providers._bridge import iterate_in_thread

    closed_in: list[int] = []
    closed = threading.Event()

    def events(fail: bool) -> Iterator[int]:
        try:
            yield 1
            yield 2
            if fail:
                raise ValueError("boom")
            yield 3
        finally:
            closed_in.append(threading.get_ident())
            closed.set()

    async def failing() -> list[int]:
        got: list[int] = []
        with pytest.raises(ValueError, match="boom"):
            async for event in iterate_in_thread(lambda: events(True)):
                got.append(event)
        return got

    async def left_early() -> list[int]:
        got: list[int] = []
        stream = iterate_in_thread(lambda: events(False))
        async for event in stream:
            got.append(event)
            break
        await stream.aclose()  # type: ignore[attr-defined]
        return got

    assert asyncio.run(failing()) == [1, 2]
    assert closed.wait(HOLD) and closed_in[-1] != threading.get_ident()
    closed.clear()
    assert asyncio.run(left_early()) == [1]
    assert closed.wait(HOLD) and closed_in[-1] != threading.get_ident(), "closed by the worker, not the loop"


def test_a_bridged_call_runs_in_the_callers_context_and_hands_back_its_result_or_error() -> None:
    """As ``asyncio.to_thread``: the caller's context variables are seen in the worker."""
    import contextvars

    from providers._bridge import call_in_thread

    name: contextvars.ContextVar[str] = contextvars.ContextVar("name")

    def work(fail: bool) -> tuple[str, int]:
        if fail:
            raise ValueError("boom")
        return name.get(), threading.get_ident()

    async def main() -> tuple[str, int]:
        name.set("caller's")
        with pytest.raises(ValueError, match="boom"):
            await call_in_thread(lambda: work(True))
        return await call_in_thread(lambda: work(False))

    seen, thread = asyncio.run(main())
    assert seen == "caller's" and thread != threading.get_ident()


def test_a_cancelled_bridged_call_sends_no_retry() -> None:
    """Once its caller is cancelled, the worker's next request (a retry of the SDK's) is not sent."""
    from providers._bridge import Abandoned, _Abort

    abort = _Abort()
    abort.abort()
    with pytest.raises(Abandoned):
        abort.watch_pending(SimpleNamespace(abort=lambda: None))
