"""A loopback Chat Completions server that behaves like llama.cpp's (issue 16), for tests.

It listens on 127.0.0.1 on a port the OS picks, serves from one thread, and stops by itself after
``max_requests`` requests (or when its ``with`` block ends, whichever comes first), so a test that
goes wrong cannot leave it running. What it does:

- an assistant message with ``tool_calls`` whose ``content`` is not a string is rejected the way
  llama.cpp's chat template rejects it: ``500 'dict object' has no attribute 'content'`` for a
  plain request, and, for a streamed one, a 200 event stream that ends without a single event;
- ``empty_streams=True`` answers every streamed request with that empty 200 stream;
- otherwise the first round gets one ``get_weather`` call (its arguments split over deltas when
  streamed) and the round after the tool result a text answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

ANSWER = "It is sunny in Paris."
TEMPLATE_ERROR = {"error": {"code": 500, "message": "'dict object' has no attribute 'content'", "type": "server_error"}}


@dataclass
class LocalServer:
    empty_streams: bool = False
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request body received, in order."""

    def rejects(self, body: dict[str, Any]) -> bool:
        return any(
            m.get("role") == "assistant" and m.get("tool_calls") and not isinstance(m.get("content"), str)
            for m in body.get("messages", ())
        )


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local",
        "model": "local",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _stream_events(answered: bool) -> list[dict[str, Any]]:
    usage = {
        "id": "chatcmpl-local",
        "model": "local",
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3},
    }
    if answered:
        head = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "It is sunny"})]
        return [*head, _chunk({"content": " in Paris."}), _chunk({}, "stop"), usage]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    pieces = [{"index": 0, "function": {"arguments": piece}} for piece in ('{"ci', 'ty": "Pa', 'ris"}')]
    return [
        _chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        *(_chunk({"tool_calls": [piece]}) for piece in pieces),
        _chunk({}, "tool_calls"),
        usage,
    ]


def _reply(answered: bool) -> dict[str, Any]:
    if answered:
        message: dict[str, Any] = {"role": "assistant", "content": ANSWER}
    else:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    finish = "stop" if answered else "tool_calls"
    return {
        "id": "chatcmpl-local",
        "model": "local",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3},
    }


def _handler(state: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, and a streamed body ends when the connection closes.
        protocol_version = "HTTP/1.0"
        timeout = 10  # a socket timeout: a client that connects and sends nothing cannot hold the server

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append(body)
            streamed = bool(body.get("stream"))
            if streamed and (state.empty_streams or state.rejects(body)):
                # What llama.cpp does when it fails after its 200: headers, then nothing at all.
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                return
            if state.rejects(body):
                self._send(500, "application/json", json.dumps(TEMPLATE_ERROR).encode())
                return
            answered = any(m.get("role") == "tool" for m in body.get("messages", ()))
            if streamed:
                events = "".join(f"data: {json.dumps(e)}\n\n" for e in _stream_events(answered)) + "data: [DONE]\n\n"
                self._send(200, "text/event-stream", events.encode())
            else:
                self._send(200, "application/json", json.dumps(_reply(answered)).encode())

    return Handler


@contextmanager
def local_server(*, empty_streams: bool = False, max_requests: int = 16) -> Iterator[LocalServer]:
    """The server, running in a thread until the block ends or ``max_requests`` were served."""
    state = LocalServer(empty_streams)
    server = HTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.timeout = 0.05  # how often the loop looks at ``stop`` while idle; no test waits on it
    stop = threading.Event()

    def serve() -> None:
        served = 0
        while not stop.is_set() and served < max_requests:
            before = len(state.requests)
            server.handle_request()
            served += len(state.requests) - before

    thread = threading.Thread(target=serve, name="local-openai-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()
        server.server_close()
