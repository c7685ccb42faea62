"""A loopback OpenAI-compatible server that plays a scripted conversation, for the terminal chat test.

It listens on 127.0.0.1 on a port the OS picks, serves from one thread and stops by itself after
``max_requests`` requests or when its ``with`` block ends. It streams every reply (the chat always
streams) and answers from the request, so the test sees what the client really sent:

- after a tool result: ``Tool said: <the result>``;
- a user text with ``weather``: a ``get_weather`` call for Paris (arguments split over deltas);
- with ``book``: a ``book_flight`` call for VX205 (a gated tool in the test's tools);
- with ``first``: ``Your first message was: <the first user text of the conversation>``, which
  only memory can know;
- with ``pay``: a ``pay_invoice`` call for INV-7 (a tool that needs the approver role ``manager``);
- with ``think``: reasoning (``reasoning_content`` deltas: ``Let me think. The answer is 42.``),
  then ``It is 42.``;
- with ``stall``: ``Once upon a time`` and then nothing: the server waits (bounded) until the client
  closes the connection, and sets ``disconnected`` (the stream really was closed);
- anything else: ``Hello! You said: <text>``, in three pieces.
"""

from __future__ import annotations

import json
import select
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any


@dataclass
class ChatServer:
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    disconnected: threading.Event = field(default_factory=threading.Event)
    """Set when a client closed a stalled stream."""


STALL_BOUND = 30.0
"""The longest a stalled reply waits for the client to close it; a bound, never a measure."""

STALLED = "Once upon a time"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-cli", "model": "cli", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _text(text: str) -> list[dict[str, Any]]:
    third = max(1, len(text) // 3)
    pieces = [text[:third], text[third : 2 * third], text[2 * third :]]
    return [_chunk({"role": "assistant", "content": ""}), *(_chunk({"content": p}) for p in pieces), _chunk({}, "stop")]


def _call(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    half = len(arguments) // 2
    pieces = [{"index": 0, "function": {"arguments": p}} for p in (arguments[:half], arguments[half:])]
    return [
        _chunk({"role": "assistant", "content": None, "tool_calls": [head]}),
        *(_chunk({"tool_calls": [p]}) for p in pieces),
        _chunk({}, "tool_calls"),
    ]


def _thinking() -> list[dict[str, Any]]:
    thoughts = [_chunk({"reasoning_content": p}) for p in ("Let me think. ", "The answer is 42.")]
    return [_chunk({"role": "assistant", "content": ""}), *thoughts, *_text("It is 42.")[1:]]


def _user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]


def reply_to(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return _text(f"Tool said: {last.get('content')}")
    users = _user_texts(messages)
    text = users[-1] if users else ""
    if "weather" in text:
        return _call("call_w1", "get_weather", '{"city": "Paris"}')
    if "book" in text:
        return _call(f"call_b{len(messages)}", "book_flight", '{"flight": "VX205"}')
    if "pay" in text:
        return _call(f"call_p{len(messages)}", "pay_invoice", '{"invoice": "INV-7"}')
    if "think" in text:
        return _thinking()
    if "stall" in text:
        return [_chunk({"role": "assistant", "content": ""}), _chunk({"content": STALLED})]
    if "first" in text:
        return _text(f"Your first message was: {users[0]}")
    return _text(f"Hello! You said: {text}")


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when it closes
        timeout = 10  # a client that connects and sends nothing cannot hold the server

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.requests.append(body)
            events = "".join(f"data: {json.dumps(e)}\n\n" for e in reply_to(body))
            last = body["messages"][-1] if body.get("messages") else {}
            if last.get("role") == "user" and "stall" in str(last.get("content")):
                self._stall(events.encode())
                return
            payload = (events + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stall(self, head: bytes) -> None:
            """Send the start of a reply, then wait for the client to hang up (end of file)."""
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(head)
            self.wfile.flush()
            readable, _, _ = select.select([self.connection], [], [], STALL_BOUND)
            if readable and self.connection.recv(1) == b"":
                state.disconnected.set()

    return Handler


@contextmanager
def chat_server(*, max_requests: int = 32) -> Iterator[ChatServer]:
    """The server, running in a thread until the block ends or ``max_requests`` were served."""
    state = ChatServer()
    server = HTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.timeout = 0.05  # how often the loop looks at ``stop`` while idle; no test waits on it
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set() and len(state.requests) < max_requests:
            server.handle_request()

    thread = threading.Thread(target=serve, name="cli-chat-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()
        server.server_close()
