"""The loopback HTTP/1.1 server of S4 and S5: ``python -m benchmarks.server``.

It binds 127.0.0.1 only, on an ephemeral port that it prints as ``PORT <n>``, answers with the same
canned bytes as the mock transport (``canned.route``), keeps connections alive, and streams SSE (or
Bedrock's binary event stream) with chunked encoding (one chunk per event). It stops by itself after
``--max-requests`` requests, after ``--max-seconds`` in all, or after ``--idle-seconds`` without a
request, whichever comes first; the harness also stops it when it is done.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from .canned import JSON_HEADERS, STREAMS, headers_for, route, split_frames

HOST = "127.0.0.1"


def _head(headers: tuple[tuple[str, str], ...], extra: str) -> bytes:
    lines = ["HTTP/1.1 200 OK", *(f"{k}: {v}" for k, v in headers), extra, "", ""]
    return "\r\n".join(lines).encode()


def _chunked_stream(wire: str, body: bytes) -> tuple[bytes, bytes]:
    """The streamed reply as (head and first two events, the rest), one chunk per event."""
    if wire == "bedrock":
        events, path = split_frames(body), "/converse-stream"
    else:
        events, path = [e + b"\n\n" for e in body.split(b"\n\n") if e], ""
    chunks = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    head = _head(headers_for(path, True), "transfer-encoding: chunked")
    return head + b"".join(chunks[:2]), b"".join(chunks[2:]) + b"0\r\n\r\n"


_STREAM_REPLIES = {body: _chunked_stream(wire, body) for wire, body in STREAMS.items()}


class Server:
    def __init__(self, max_requests: int, max_seconds: float, idle_seconds: float) -> None:
        self.max_requests = max_requests
        self.deadline = time.monotonic() + max_seconds
        self.idle_seconds = idle_seconds
        self.requests = 0
        self.last = time.monotonic()
        self.done = asyncio.Event()

    async def _read_body(self, reader: asyncio.StreamReader, head: bytes) -> bytes:
        lower = head.lower()
        if b"transfer-encoding: chunked" in lower:
            parts: list[bytes] = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                data = await reader.readexactly(size + 2)
                if size == 0:
                    return b"".join(parts)
                parts.append(data[:-2])
        index = lower.find(b"content-length:")
        if index < 0:
            return b""
        length = int(lower[index + 15 : lower.index(b"\r\n", index)].strip())
        return await reader.readexactly(length)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not self.done.is_set():
                head = await reader.readuntil(b"\r\n\r\n")
                body = await self._read_body(reader, head)
                path = head.split(b" ", 2)[1].decode()
                content, sse = route(path.split("?", 1)[0], body)
                if sse:
                    first, rest = _STREAM_REPLIES[content]
                    writer.write(first)
                    await writer.drain()
                    writer.write(rest)
                else:
                    writer.write(_head(JSON_HEADERS, f"content-length: {len(content)}") + content)
                await writer.drain()
                self.requests += 1
                self.last = time.monotonic()
                if self.requests >= self.max_requests:
                    self.done.set()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def watchdog(self) -> None:
        while not self.done.is_set():
            now = time.monotonic()
            if now > self.deadline or now - self.last > self.idle_seconds:
                self.done.set()
            await asyncio.sleep(0.2)


async def serve(max_requests: int, max_seconds: float, idle_seconds: float) -> int:
    state = Server(max_requests, max_seconds, idle_seconds)
    server = await asyncio.start_server(state.handle, HOST, 0, backlog=1024, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    watchdog = asyncio.create_task(state.watchdog())
    async with server:
        await state.done.wait()
    watchdog.cancel()
    return state.requests


@contextlib.contextmanager
def running(max_requests: int, max_seconds: float, idle_seconds: float = 60.0) -> Iterator[int]:
    """Start the server in its own process (its own core), yield its port, stop it."""
    command = [sys.executable, "-m", "benchmarks.server", f"--max-requests={max_requests}",
               f"--max-seconds={max_seconds}", f"--idle-seconds={idle_seconds}"]  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=30):
                raise RuntimeError("the loopback server did not start within 30 s")
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the loopback server failed to start: {line!r}")
        yield int(line.split()[1])
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-requests", type=int, default=200_000)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    served = asyncio.run(serve(args.max_requests, args.max_seconds, args.idle_seconds))
    print(f"SERVED {served}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
