"""The AWS event-stream framing that Bedrock's ``ConverseStream`` answers in
(``application/vnd.amazon.eventstream``), decoded by hand: it is small, and botocore's decoder
would make the signing library a dependency of reading a stream too.

A message is a 12-byte prelude (total length, headers length, both big-endian ``uint32``, and the
CRC-32 of those 8 bytes), its headers, its payload, and the CRC-32 of everything before it. A
header is a 1-byte name length, the name, a 1-byte value type and the value. Every length is
checked against the bytes there are and both checksums are verified, so a cut or corrupted stream
is an error (:class:`~chatclient.errors.MalformedResponseError`), never a wrong event; the last
incomplete message of a stream that ends is :class:`~chatclient.errors.StreamIncompleteError`.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

from chatclient.errors import MalformedResponseError, StreamIncompleteError

__all__ = ["MAX_MESSAGE_BYTES", "EventMessage", "EventStreamDecoder", "encode_event"]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message taken (AWS's own limit): a length past it is a broken stream, not a wait."""
_MAX_HEADERS_BYTES = 128 * 1024
_PRELUDE = 12
_MIN_MESSAGE = _PRELUDE + 4

_FIXED: dict[int, tuple[str, int]] = {2: (">b", 1), 3: (">h", 2), 4: (">i", 4), 5: (">q", 8), 8: (">q", 8)}
"""Header value types of a fixed size: byte, short, integer, long, timestamp (ms since the epoch)."""


@dataclass(frozen=True)
class EventMessage:
    """One decoded message: its headers (``:event-type``, ``:message-type``, ...) and raw payload."""

    headers: dict[str, Any]
    payload: bytes


class EventStreamDecoder:
    """Feed it the body's bytes as they come (any split); it returns the whole messages so far."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[EventMessage]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= _PRELUDE:
            total = self._check_prelude()
            if len(self._buffer) < total:
                break
            messages.append(self._message(bytes(self._buffer[:total])))
            del self._buffer[:total]
        return messages

    def finish(self) -> None:
        """The body has ended: bytes left over are a message cut short."""
        if self._buffer:
            raise StreamIncompleteError(
                f"The event stream ended inside a message ({len(self._buffer)} bytes of it came)",
                provider=self._provider,
            )

    def _broken(self, why: str) -> MalformedResponseError:
        return MalformedResponseError(f"Broken event stream: {why}", provider=self._provider)

    def _check_prelude(self) -> int:
        total, headers_length, crc = struct.unpack_from(">III", self._buffer)
        if zlib.crc32(self._buffer[:8]) != crc:
            raise self._broken("the prelude's checksum does not match")
        if not _MIN_MESSAGE <= total <= MAX_MESSAGE_BYTES:
            raise self._broken(f"a message of {total} bytes")
        if headers_length > min(_MAX_HEADERS_BYTES, total - _MIN_MESSAGE):
            raise self._broken(f"{headers_length} bytes of headers in a message of {total}")
        return int(total)

    def _message(self, message: bytes) -> EventMessage:
        (crc,) = struct.unpack_from(">I", message, len(message) - 4)
        if zlib.crc32(message[:-4]) != crc:
            raise self._broken("a message's checksum does not match")
        (headers_length,) = struct.unpack_from(">I", message, 4)
        headers_end = _PRELUDE + headers_length
        headers = self._headers(message[_PRELUDE:headers_end])
        return EventMessage(headers, message[headers_end:-4])

    def _headers(self, data: bytes) -> dict[str, Any]:
        headers: dict[str, Any] = {}
        at = 0
        try:
            while at < len(data):
                size = data[at]
                name = data[at + 1 : at + 1 + size].decode()
                at += 1 + size
                kind = data[at]
                at += 1
                value, at = self._value(kind, data, at)
                if at > len(data):
                    raise IndexError
                headers[name] = value
        except (IndexError, struct.error, UnicodeDecodeError) as exc:
            raise self._broken(f"a header runs past its message ({type(exc).__name__})") from exc
        return headers

    def _value(self, kind: int, data: bytes, at: int) -> tuple[Any, int]:
        if kind in (0, 1):
            return kind == 0, at
        if kind in _FIXED:
            form, size = _FIXED[kind]
            return struct.unpack_from(form, data, at)[0], at + size
        if kind in (6, 7):
            (size,) = struct.unpack_from(">H", data, at)
            raw = data[at + 2 : at + 2 + size]
            if len(raw) != size:
                raise IndexError
            return (raw.decode() if kind == 7 else bytes(raw)), at + 2 + size
        if kind == 9:
            raw = data[at : at + 16]
            if len(raw) != 16:
                raise IndexError
            return uuid.UUID(bytes=bytes(raw)), at + 16
        raise self._broken(f"a header of unknown type {kind}")


def _string_header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def encode_event(event_type: str, payload: bytes) -> bytes:
    """One ``event`` message framed as Bedrock frames it (string headers ``:event-type``,
    ``:content-type`` and ``:message-type``, both CRCs): for test servers and benchmarks."""
    headers = _string_header(":event-type", event_type) + _string_header(":content-type", "application/json")
    headers += _string_header(":message-type", "event")
    prelude = struct.pack(">II", _MIN_MESSAGE + len(headers) + len(payload), len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))
