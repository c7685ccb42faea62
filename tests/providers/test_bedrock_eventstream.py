"""Bedrock's event-stream framing, decoded from real recorded ``ConverseStream`` bodies: whole, in
every split (fuzzed), and refused when cut or corrupted, never read as a wrong event."""

from __future__ import annotations

import json
import struct
import uuid
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatclient.errors import MalformedResponseError, StreamIncompleteError
from providers.bedrock._eventstream import EventMessage, EventStreamDecoder

from .fixtures import fixture_files, interactions, recorded_eventstream

STREAMS = [
    (name, index)
    for name in fixture_files("bedrock")
    for index, interaction in enumerate(interactions("bedrock", name))
    if "eventstream_base64" in interaction["response"]
]


def _body(name: str, index: int = 0) -> bytes:
    return recorded_eventstream(interactions("bedrock", name)[index])


def _decode(*pieces: bytes) -> list[EventMessage]:
    decoder = EventStreamDecoder("bedrock")
    messages = [message for piece in pieces for message in decoder.feed(piece)]
    decoder.finish()
    return messages


def test_every_recorded_stream_is_there() -> None:
    assert {name for name, _ in STREAMS} == {"d_stream_reasoning", "d_stream_text", "d_stream_tool_use_roundtrip"}


@pytest.mark.parametrize(("name", "index"), STREAMS)
def test_a_recorded_stream_decodes_into_its_events(name: str, index: int) -> None:
    messages = _decode(_body(name, index))
    kinds = [message.headers[":event-type"] for message in messages]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    assert all(message.headers[":message-type"] == "event" for message in messages)
    assert all(message.headers[":content-type"] == "application/json" for message in messages)
    payloads = [json.loads(message.payload) for message in messages]
    assert payloads[-1]["usage"]["totalTokens"] > 0


def test_the_recorded_text_deltas_make_the_reply() -> None:
    payloads = [json.loads(message.payload) for message in _decode(_body("d_stream_text"))]
    text = "".join(p["delta"]["text"] for p in payloads if "delta" in p)
    assert text.startswith("The capital of France is Paris.") and text.endswith('"The City of Love."')
    assert payloads[-2]["stopReason"] == "end_turn"


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_split_of_a_stream_gives_the_same_events(data: st.DataObject) -> None:
    name, index = data.draw(st.sampled_from(STREAMS))
    body = _body(name, index)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=40)))
    pieces = [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert _decode(*pieces) == _decode(body)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_corrupted_byte_is_always_an_error(data: st.DataObject) -> None:
    """CRC-32 catches every single-byte change: in a length, a header, a payload or a checksum."""
    body = bytearray(_body("d_stream_text"))
    at = data.draw(st.integers(0, len(body) - 1))
    body[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(MalformedResponseError):
        _decode(bytes(body))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_stream_cut_short_keeps_its_whole_events_and_then_fails(data: st.DataObject) -> None:
    body = _body("d_stream_tool_use_roundtrip")
    whole = _decode(body)
    cut = data.draw(st.integers(1, len(body) - 1))
    decoder = EventStreamDecoder("bedrock")
    got = decoder.feed(body[:cut])
    assert got == whole[: len(got)]
    boundaries, at = set(), 0
    while at < len(body):
        at += struct.unpack_from(">I", body, at)[0]
        boundaries.add(at)
    if cut in boundaries:  # whole events only: the framing cannot tell (the parser's messageStop check can)
        decoder.finish()
    else:
        with pytest.raises(StreamIncompleteError):
            decoder.finish()


def _message(headers: bytes, payload: bytes) -> bytes:
    """A message framed by hand (the test's own encoder, for header types the recordings lack)."""
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _header(name: str, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([kind]) + value


def test_every_header_type_is_read() -> None:
    an_id = uuid.uuid4()
    headers = b"".join(
        [
            _header("t", 0, b""),
            _header("f", 1, b""),
            _header("b", 2, struct.pack(">b", -3)),
            _header("s", 3, struct.pack(">h", -300)),
            _header("i", 4, struct.pack(">i", 70000)),
            _header("l", 5, struct.pack(">q", 2**40)),
            _header("bytes", 6, struct.pack(">H", 3) + b"\x00\x01\x02"),
            _header("str", 7, struct.pack(">H", 4) + "héy".encode()),
            _header("ts", 8, struct.pack(">q", 1_700_000_000_000)),
            _header("id", 9, an_id.bytes),
        ]
    )
    (message,) = _decode(_message(headers, b"{}"))
    assert message.headers == {
        "t": True,
        "f": False,
        "b": -3,
        "s": -300,
        "i": 70000,
        "l": 2**40,
        "bytes": b"\x00\x01\x02",
        "str": "héy",
        "ts": 1_700_000_000_000,
        "id": an_id,
    }
    assert message.payload == b"{}"


@pytest.mark.parametrize(
    "headers",
    [_header("x", 42, b""), _header("x", 7, struct.pack(">H", 50) + b"short"), b"\x09ab"],
    ids=["unknown type", "string past its message", "name past its message"],
)
def test_a_broken_header_is_an_error(headers: bytes) -> None:
    with pytest.raises(MalformedResponseError, match="Broken event stream"):
        _decode(_message(headers, b"{}"))


def test_a_huge_length_is_refused_at_once_not_waited_for() -> None:
    prelude = struct.pack(">II", 1 << 30, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(MalformedResponseError, match="a message of"):
        EventStreamDecoder("bedrock").feed(prelude)


def test_an_encoded_event_decodes_to_itself() -> None:
    from providers.bedrock._eventstream import encode_event

    (message,) = _decode(encode_event("messageStop", b'{"stopReason":"end_turn"}'))
    assert message.headers == {
        ":event-type": "messageStop",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert message.payload == b'{"stopReason":"end_turn"}'
