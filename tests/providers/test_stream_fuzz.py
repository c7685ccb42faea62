"""Property tests of every stream parser over the recorded streams (issue 31, item 6).

Table-driven (:data:`tests.providers.stream_fuzz.STREAMS`: a provider is one line), each reply read
through the provider's real model and transport:

- the same bytes re-chunked anywhere (inside a UTF-8 character, inside a ``data:`` field name,
  between ``\\r`` and ``\\n``) give the same reply, sync and async;
- a body cut before its terminal event raises ``StreamIncompleteError``;
- inserted garbage, mangled JSON, fields of the wrong type, invalid UTF-8 and a 10,000-deep JSON in
  the arguments end in the recorded reply or a ``ChatClientError``, never another exception, and
  through the tool loop no tool ever runs with arguments other than the recorded ones;
- an endless keep-alive stream ends at the deadline (a loopback server); for the binary event
  stream, which has no keep-alive, a server that stalls after the first events.

Example counts are kept small so the file runs in well under a minute.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatclient import ChatClient
from chatclient.errors import APITimeoutError, ChatClientError, MalformedResponseError, StreamIncompleteError
from chatclient.messages import ToolCall
from chatclient.tools import FunctionToolCallback
from chatclient.tools._limits import canonical_arguments

from .stream_fuzz import (
    STREAMS,
    TOOL_STREAMS,
    Server,
    Stream,
    comparable,
    interesting_cuts,
    pieces,
    streamed_reply,
    with_crlf,
    with_multibyte_text,
)

EXAMPLES = int(os.environ.get("CHATCLIENT_FUZZ_EXAMPLES", "12"))
"""Examples per stream and property: 12 keeps the file well under a minute; raise it for a long hunt."""
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
by_stream = pytest.mark.parametrize("stream", STREAMS, ids=[s.id for s in STREAMS])
by_tool_stream = pytest.mark.parametrize("stream", TOOL_STREAMS, ids=[s.id for s in TOOL_STREAMS])

_baselines: dict[tuple[str, bytes], Any] = {}


def baseline(stream: Stream, body: bytes) -> Any:
    """The reply of ``body`` read in one piece (cached: every example compares against it)."""
    key = (stream.id, body)
    if key not in _baselines:
        _baselines[key] = comparable(streamed_reply(stream, [body]))
    return _baselines[key]


def cuts_of(stream: Stream, body: bytes) -> st.SearchStrategy[list[int]]:
    special = interesting_cuts(stream, body)
    anywhere = st.integers(1, len(body) - 1)
    return st.lists(st.one_of(st.sampled_from(special), anywhere) if special else anywhere, max_size=40)


# ------------------------------------------------------------------------------ re-chunking


@by_stream
def test_crlf_line_ends_give_the_same_reply(stream: Stream) -> None:
    assert baseline(stream, with_crlf(stream, stream.body)) == baseline(stream, stream.body)


@by_stream
@FUZZ
@given(data=st.data(), use_async=st.booleans())
def test_the_same_bytes_in_any_chunks_give_the_same_reply(stream: Stream, data: st.DataObject, use_async: bool) -> None:
    body = with_crlf(stream, with_multibyte_text(stream, stream.body))
    cuts = data.draw(cuts_of(stream, body), label="cuts")
    assert comparable(streamed_reply(stream, pieces(body, cuts), use_async=use_async)) == baseline(stream, body)


@by_stream
def test_every_byte_on_its_own_gives_the_same_reply(stream: Stream) -> None:
    body = with_crlf(stream, with_multibyte_text(stream, stream.body))
    assert comparable(streamed_reply(stream, [body[i : i + 1] for i in range(len(body))])) == baseline(stream, body)


# ------------------------------------------------------------------------------ cut short


@by_stream
@FUZZ
@given(data=st.data(), use_async=st.booleans())
def test_a_body_cut_before_its_terminal_event_is_incomplete(
    stream: Stream, data: st.DataObject, use_async: bool
) -> None:
    body = with_multibyte_text(stream, stream.body)
    end = data.draw(st.integers(0, stream.terminal_offset(body)), label="end")
    cuts = data.draw(st.lists(st.integers(1, max(1, end - 1)), max_size=8), label="cuts")
    with pytest.raises(StreamIncompleteError):
        streamed_reply(stream, pieces(body[:end], cuts), use_async=use_async)


# ------------------------------------------------------------------------------ damage


def typed_tools(runs: list[tuple[str, str]]) -> list[Any]:
    """The recorded replies' tools, typed as their requests declared them; each run is recorded."""

    def secret_retrieval_tool(password: str) -> str:
        runs.append(("secret_retrieval_tool", canonical_arguments(json.dumps({"password": password}))))
        return "a secret"

    def weather(latitude: str, longitude: str) -> str:
        runs.append(("weather", canonical_arguments(json.dumps({"latitude": latitude, "longitude": longitude}))))
        return "sunny"

    def get_temperature(city: str) -> str:
        runs.append(("get_temperature", canonical_arguments(json.dumps({"city": city}))))
        return "30°C"

    tools = (secret_retrieval_tool, weather, get_temperature)
    return [FunctionToolCallback.builder(fn.__name__, fn).build() for fn in tools]


GARBAGE_LINES = [b"garbage", b"data: garbage", b"data: {", b"data: [1, 2", b"\x00\x01\x02", b"event: nonsense\ndata: 7"]
INVALID_UTF8 = [b"\xff", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]
WRONG_VALUES: list[Any] = [7, -1.5, True, "text", [], [1, "x"], {}, {"x": {"y": []}}]
"""Values of another type than a field's own (``null`` is left out: it is how a server says a
field is absent, and an absent optional field is no damage)."""
DEEP = "[" * 10_000 + "]" * 10_000
"""A 10,000-deep JSON text."""


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index)
            yield from _paths(item, (*path, index))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


KEEPS_THE_REPLY = frozenset({"garbage", "mangled", "invalid utf-8"})
"""Damage after which a reply, if one comes, must be the recorded one: ignored lines between
events, or damage that must be refused (a JSON cut short, bytes that are not UTF-8)."""


@st.composite
def damaged(draw: st.DrawFn, stream: Stream) -> tuple[str, bytes]:
    """One kind of damage, and the recorded body with it."""
    body = stream.body
    events = stream.payloads(body)
    kind = draw(st.sampled_from(["garbage", "mangled", "wrong type", "invalid utf-8", "deep arguments"]))
    if kind == "garbage":  # whole lines (raw bytes, in a binary framing) between two events
        at = draw(st.sampled_from(stream.boundaries(body)))
        line = draw(
            st.sampled_from(GARBAGE_LINES) | st.binary(min_size=1, max_size=12).filter(lambda b: b"\n" not in b)
        )
        return kind, body[:at] + stream.garbage(line) + body[at:]
    if kind == "invalid utf-8":  # inside a binary frame's payload, the frame is rebuilt around it
        at = draw(st.integers(0, len(body)))
        return kind, stream.splice(body, at, at, draw(st.sampled_from(INVALID_UTF8)))
    if kind == "deep arguments":  # every event: the call's arguments as a whole are deep
        return kind, _deepened(stream, body)
    start, end = draw(st.sampled_from(events))
    if kind == "mangled":  # one event's JSON cut short: never valid JSON
        cut = draw(st.integers(start + 1, end - 1))
        return kind, stream.splice(body, cut, end, b"")
    event = json.loads(body[start:end])
    path = draw(st.sampled_from(list(_paths(event)) or [("x",)]))
    original = _get(event, path)
    _set(event, path, draw(st.sampled_from([v for v in WRONG_VALUES if type(v) is not type(original)])))
    return kind, stream.splice(body, start, end, json.dumps(event, separators=(",", ":")).encode())


DEEP_OBJECT_MARK = "\u0000deep object\u0000"


def _deepened(stream: Stream, body: bytes) -> bytes:
    """``body`` with every event's tool-call arguments made 10,000 deep (:func:`_deepen_arguments`)."""
    deep_object = ('{"x": ' + DEEP + "}").encode()
    for start, end in reversed(stream.payloads(body)):
        event = json.dumps(_deepen_arguments(json.loads(body[start:end]))).encode()
        body = stream.splice(body, start, end, event.replace(json.dumps(DEEP_OBJECT_MARK).encode(), deep_object))
    return body


def _deepen_arguments(value: Any, parent: object = None) -> Any:
    """Every tool-call argument of an event made a 10,000-deep JSON: text where the wire sends text
    (a fragment: Bedrock's ``toolUse.input``), the nested value itself where it sends an object
    (Ollama's ``arguments``, Gemini's ``args``)."""
    if isinstance(value, list):
        return [_deepen_arguments(v, parent) for v in value]
    if not isinstance(value, dict):
        return value
    deep: dict[str, Any] = {}
    for key, item in value.items():
        arguments = key in ("arguments", "partial_json", "args")
        arguments = arguments or (key == "delta" and "arguments" in str(value.get("type")))
        arguments = arguments or (key == "input" and parent == "toolUse")
        if arguments and isinstance(item, str):
            deep[key] = DEEP
        elif arguments and isinstance(item, dict):
            deep[key] = DEEP_OBJECT_MARK  # spliced in as text by _deepened: json.dumps cannot nest so deep
        else:
            deep[key] = _deepen_arguments(item, key)
    return deep


def _recorded_calls(stream: Stream) -> set[tuple[str, str]]:
    reply = streamed_reply(stream, [stream.body])
    return {(call.name, canonical_arguments(call.arguments)) for call in _calls(reply)}


def _calls(reply: Any) -> list[ToolCall]:
    return [call for generation in reply.generations for call in generation.output.tool_calls]


@by_stream
@FUZZ
@given(data=st.data())
def test_a_damaged_stream_gives_the_recorded_reply_or_a_chatclient_error(stream: Stream, data: st.DataObject) -> None:
    kind, body = data.draw(damaged(stream), label="damage")
    try:
        reply = streamed_reply(stream, [body])
    except ChatClientError:
        return
    except Exception as exc:  # the property: no other exception type ever escapes
        pytest.fail(f"{type(exc).__name__} escaped: {exc!r:.300}")
    if kind in KEEPS_THE_REPLY:
        assert comparable(reply) == baseline(stream, stream.body)


@by_tool_stream
@FUZZ
@given(data=st.data(), mode=st.sampled_from(["stream", "astream"]))
def test_through_the_tool_loop_no_tool_runs_on_damaged_arguments(
    stream: Stream, data: st.DataObject, mode: str
) -> None:
    _, body = data.draw(damaged(stream), label="damage")
    recorded = _recorded_calls(stream)
    runs: list[tuple[str, str]] = []
    client = ChatClient.builder(Server(stream, [body]).model()).default_tools(*typed_tools(runs)).build()
    try:
        if mode == "stream":
            "".join(client.prompt("hi").stream().content())
        else:
            _run_async(lambda: _astream_text(client))
    except ChatClientError:
        pass
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped the tool loop: {exc!r:.300}")
    assert set(runs) <= recorded, f"a tool ran with arguments the model never sent: {set(runs) - recorded}"


async def _astream_text(client: ChatClient) -> str:
    return "".join([chunk async for chunk in client.prompt("hi").astream().content()])


def _run_async(factory: Callable[[], Any]) -> Any:
    from chatclient._sync import run_sync

    return run_sync(factory)


@by_tool_stream
def test_deep_arguments_reach_the_tool_loop_and_the_tool_never_runs(stream: Stream) -> None:
    """One fixed case of the property above: the recorded reply, every argument fragment made a
    10,000-deep JSON; the loop tells the model the arguments are bad and no tool runs."""
    body = _deepened(stream, stream.body)
    runs: list[tuple[str, str]] = []
    server = Server(stream, [body])
    client = ChatClient.builder(server.model()).default_tools(*typed_tools(runs)).build()
    try:
        "".join(client.prompt("hi").stream().content())
    except StreamIncompleteError:
        assert stream.follow_up is None  # no answer recorded after the tool results: the round after fails
    except MalformedResponseError:  # a wire that sends arguments as an object: the event itself is refused
        assert runs == []
        assert len(server.sent) == 1
        return
    assert runs == []
    assert len(server.sent) >= 2, "the loop went on to tell the model"
    told = json.dumps(server.sent[1])
    assert "are not valid JSON" in told or "Invalid arguments" in told


# ------------------------------------------------------------------------------ keep-alive


@by_stream
@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_an_endless_keep_alive_stream_ends_at_the_deadline(stream: Stream, mode: str) -> None:
    from .keepalive_server import DEADLINE, keepalive_server

    body = stream.body[: stream.terminal_offset(stream.body)]
    with keepalive_server(body, stream) as server:
        model = server.model(stream)
        with pytest.raises(APITimeoutError) as raised:
            if mode == "stream":
                list(model.stream(_prompt()))
            else:

                async def read() -> None:
                    async for _ in model.astream(_prompt()):
                        pass

                _run_async(read)
        assert f"deadline of {DEADLINE:g} s" in raised.value.message
        assert server.hung_up.wait(30), "the client hung up on the endless stream"
        assert server.keepalives >= 1, "the server was still sending keep-alives when the client left"


def _prompt() -> Any:
    from chatclient.prompt import Prompt

    return Prompt("hi")


# ------------------------------------------------------------------------------ what the fuzzing found

CHAT = "openai-chat/d_stream_text_with_usage"
FC_ID = b'"id":"fc_0c3b09d20eedf2d30068f966bad8b88190af96d232f504ef1f",'
FINDINGS = [
    # A byte that is not UTF-8 was read as U+FFFD (httpx2 decodes with errors="replace"): the reply's
    # id (or a text, or a tool call's arguments) changed without a word.
    (CHAT, b'"id":"chatcmpl-', b'"id":"\xffchatcmpl-', MalformedResponseError),
    ("ollama/native_d_stream_ndjson", b'"content":"', b'"content":"\xc3(', MalformedResponseError),
    # A choice index that is not an int came out in the events and failed whoever folded them
    # (a TypeError in the accumulator).
    (CHAT, b'{"index":0,"delta":{"content":', b'{"index":"0","delta":{"content":', MalformedResponseError),
    (CHAT, b'{"index":0,"delta":{"content":', b'{"index":1.5,"delta":{"content":', MalformedResponseError),
    # A tool call's type that is not a string failed later, building the ``ToolCall`` (pydantic's
    # ValidationError, not a ChatClientError).
    ("openai-chat/d_stream_parallel_tool_call_deltas", b'"type":"function"', b'"type":7', MalformedResponseError),
    # An item type that is a list raised TypeError (unhashable) out of the Responses parser.
    ("openai-responses/d_stream_parallel_function_call_deltas",
     b'"output_index":0,"item":{' + FC_ID + b'"type":"function_call","status":"completed"',
     b'"output_index":0,"item":{' + FC_ID + b'"type":["function_call"],"status":"completed"',
     MalformedResponseError),
]  # fmt: skip


@pytest.mark.parametrize(("stream_id", "old", "new", "error"), FINDINGS)
def test_each_finding_stays_fixed(stream_id: str, old: bytes, new: bytes, error: type[Exception]) -> None:
    (stream,) = [s for s in STREAMS if s.id == stream_id]
    assert old in stream.body
    with pytest.raises(error):
        streamed_reply(stream, [stream.body.replace(old, new, 1)])


def test_a_body_cut_inside_a_character_or_an_ndjson_line_is_incomplete() -> None:
    """Found too: both were a ``MalformedResponseError`` ("not valid JSON") instead of a cut stream."""
    (ollama,) = [s for s in STREAMS if s.ndjson]
    with pytest.raises(StreamIncompleteError, match="in the middle of a line"):
        streamed_reply(ollama, [ollama.body[: ollama.body.index(b"\n") - 3]])
    (chat,) = [s for s in STREAMS if s.id == CHAT]
    body = with_multibyte_text(chat, chat.body)
    inside = next(i for i, byte in enumerate(body) if 0x80 <= byte < 0xC0)
    with pytest.raises(StreamIncompleteError, match="inside a UTF-8 character"):
        streamed_reply(chat, [body[:inside]])


def test_a_binary_frame_is_damaged_in_its_framing_or_in_its_json_never_silently() -> None:
    """The two layers of the event stream: a payload byte changed under the old checksum is refused
    by the framing; the same change in a rebuilt frame reaches the JSON and is refused there."""
    (bedrock,) = [s for s in STREAMS if s.id == "bedrock/d_stream_text"]
    body = bedrock.body
    start, _ = bedrock.payloads(body)[1]
    flipped = body[:start] + b"[" + body[start + 1 :]
    with pytest.raises(MalformedResponseError, match=r"(?i)crc|checksum"):
        streamed_reply(bedrock, [flipped])
    with pytest.raises(MalformedResponseError) as raised:
        streamed_reply(bedrock, [bedrock.splice(body, start, start + 1, b"[")])
    assert "crc" not in str(raised.value).lower()
