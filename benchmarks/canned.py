"""The canned traffic every library is served: realistic OpenAI Chat Completions, Anthropic Messages,
Gemini ``generateContent`` and Bedrock ``Converse`` replies (shapes as recorded from the real services;
Bedrock's stream in AWS's binary event-stream framing), the tools of each scenario, and one router
that picks the reply for a request.

The router decides from the request body alone, with cheap byte searches, so that it costs every
library the same few microseconds:

- a request that carries a tool result gets the final answer;
- otherwise the first tool named in the request decides: ``get_weather`` (S2) → one call,
  ``lookup`` (S3) → four calls, ``book_flight`` (S7) → one gated call, ``tool_00`` (S7, 50 tools) →
  one call of ``tool_07``;
- a request without tools gets a plain text reply (S1), streamed when it asks for a stream (S4, 500
  deltas; Gemini and Bedrock ask in the URL, ``:streamGenerateContent`` and ``/converse-stream``,
  the others in the body);
- S8: a request offering the catalog (``catalog_000``…, 50 or 200 tools) gets the plain text reply at
  once; one offering the loop tools (``loop_00``…) gets a call of ``loop_00`` for each of its first
  four rounds (counted from the tool results it carries, other arguments each round) and the final
  answer on the fifth.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from providers.bedrock._eventstream import encode_event

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-haiku-4-5"
GEMINI_MODEL = "gemini-2.5-flash"
BEDROCK_MODEL = "us.amazon.nova-micro-v1:0"
BEDROCK_REGION = "us-east-1"
BEDROCK_KEYS = {"access_key": "AKIDEXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
"""AWS's documentation example keys: both sides sign every request with them (botocore's SigV4)."""
WIRES = ("openai", "anthropic", "gemini", "bedrock")
OPENAI_BASE = "https://api.openai.com/v1"
ANTHROPIC_BASE = "https://api.anthropic.com"
GEMINI_BASE = "https://generativelanguage.googleapis.com/v1beta"
BEDROCK_BASE = f"https://bedrock-runtime.{BEDROCK_REGION}.amazonaws.com"
API_KEY = "sk-test-not-a-real-key"

PROMPT = "What is the capital of France?"
TEXT = "The capital of France is Paris."
S2_PROMPT = "What's the weather in Paris?"
FINAL = "It is sunny in Paris, 21 degrees."
S3_PROMPT = "Look up a, b, c and d."
S7_PROMPT = "Book flight VX205."
STREAM_DELTAS = 500
S3_KEYS = ("a", "b", "c", "d")
TOOL_DELAY_S = 0.05
N_TOOLS = 50
TOOLS50_CALLED = "tool_07"
CATALOG_SIZES = (0, 50, 200)
"""S8a: the tools offered on one call that is answered with text."""
LOOP_SIZES = (1, 50)
"""S8b: the tools offered on each round of the 5-round loop."""
LOOP_ROUNDS = 5
"""S8b: model requests per loop (``LOOP_ROUNDS - 1`` tool calls, then the answer)."""

# ----------------------------------------------------------------------------------- tools


def weather_text(city: str) -> str:
    return f"Sunny in {city}, 21 degrees"


def lookup_text(key: str) -> str:
    return f"value of {key}"


def booking_text(flight: str) -> str:
    return f"Booked {flight}"


def forecast_text(index: int, city: str, days: int) -> str:
    return f"tool_{index:02d}: {city} for {days} days: sunny"


WEATHER_DESCRIPTION = "Get the current weather of a city."
LOOKUP_DESCRIPTION = "Look up the value stored under a key (takes 50 ms)."
BOOKING_DESCRIPTION = "Book a flight. Needs the user's confirmation."


def forecast_description(index: int) -> str:
    return f"Get the {index}-day-ahead weather forecast of a city for a number of days (variant {index:02d})."


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


WEATHER_SCHEMA = _object({"city": {"type": "string"}})
LOOKUP_SCHEMA = _object({"key": {"type": "string"}})
BOOKING_SCHEMA = _object({"flight": {"type": "string"}})
FORECAST_SCHEMA = _object({"city": {"type": "string"}, "days": {"type": "integer"}})


def raw_tool_specs(scenario: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, JSON schema) of the tools a hand-built request sends."""
    if scenario == "s2":
        return [("get_weather", WEATHER_DESCRIPTION, WEATHER_SCHEMA)]
    if scenario == "s3":
        return [("lookup", LOOKUP_DESCRIPTION, LOOKUP_SCHEMA)]
    if scenario == "s7confirm":
        return [("book_flight", BOOKING_DESCRIPTION, BOOKING_SCHEMA)]
    if scenario == "s7tools50":
        return [(f"tool_{i:02d}", forecast_description(i), FORECAST_SCHEMA) for i in range(N_TOOLS)]
    if scenario.startswith("catalog"):
        return [(catalog_name(i), forecast_description(i), FORECAST_SCHEMA) for i in range(int(scenario[7:]))]
    if scenario.startswith("loop"):
        return [(loop_name(i), forecast_description(i), FORECAST_SCHEMA) for i in range(int(scenario[4:]))]
    raise ValueError(scenario)


def catalog_name(index: int) -> str:
    return f"catalog_{index:03d}"


def loop_name(index: int) -> str:
    return f"loop_{index:02d}"


# ----------------------------------------------------------------------------------- OpenAI replies

_OPENAI_USAGE = {
    "prompt_tokens": 50,
    "completion_tokens": 15,
    "total_tokens": 65,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}


def _openai_completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-BMxEwRA0p0gJ52oKS7806KAlfMhqq",
        "object": "chat.completion",
        "created": 1744810634,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": _OPENAI_USAGE,
        "service_tier": "default",
        "system_fingerprint": "fp_38647f5e19",
    }


def _openai_text(text: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    return _openai_completion(message, "stop")


def _openai_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for call_id, name, args in calls
        ],
    }
    return _openai_completion(message, "tool_calls")


# ----------------------------------------------------------------------------------- Anthropic replies

_ANTHROPIC_USAGE = {
    "input_tokens": 633,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 75,
    "service_tier": "standard",
}


def _anthropic_message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5-20251001",
        "id": "msg_011CeCGmCbAyQmGiHPwNrvsc",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _ANTHROPIC_USAGE,
    }


def _anthropic_text(text: str) -> dict[str, Any]:
    return _anthropic_message([{"type": "text", "text": text}], "end_turn")


def _anthropic_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    blocks = [{"type": "tool_use", "id": call_id, "name": name, "input": args} for call_id, name, args in calls]
    return _anthropic_message(blocks, "tool_use")


# ----------------------------------------------------------------------------------- Gemini replies

_GEMINI_SIGNATURE = (
    "CtICAdHtim9BiyFrJTR8wDY7/ya4zvN0E7f/NCDBmJdBIPp4X8GlhEBD1aYLPwTQyE6WXqDOxwHUJaTe4J8tCr+CbuSknn8a4rxz5MqcVJ6G"
    "brPcfpGtaDXmHuR1o10JO5QXhm0sfucL+GM0jXgAgKnu3n7hvCQhDWSmWFN3N3sxcrnjcwVnMKe3aaa48HvL2gmnSU/3Lx2ihqP3EKNilMeuE1"
)
"""A ``thoughtSignature`` of the recorded length's order (Gemini 2.5 signs a turn's first function call)."""


def _gemini_usage(candidates: int) -> dict[str, Any]:
    return {"promptTokenCount": 70, "candidatesTokenCount": candidates, "totalTokenCount": 70 + candidates + 76,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 70}], "thoughtsTokenCount": 76}  # fmt: skip


def _gemini_response(parts: list[dict[str, Any]], finish: str | None = "STOP", candidates: int = 15) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": _gemini_usage(candidates), "modelVersion": GEMINI_MODEL,
            "responseId": "AJnyaJv6GPulqtsP5Z6fgAs"}  # fmt: skip


def _gemini_text(text: str) -> dict[str, Any]:
    return _gemini_response([{"text": text}])


def _gemini_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """Function calls as Gemini 2.5 sends them: no ids, the first part signed."""
    parts: list[dict[str, Any]] = [{"functionCall": {"name": name, "args": args}} for _, name, args in calls]
    parts[0] = {**parts[0], "thoughtSignature": _GEMINI_SIGNATURE}
    response = _gemini_response(parts)
    response["candidates"][0]["finishMessage"] = "Model generated function call(s)."
    return response


# ----------------------------------------------------------------------------------- Bedrock replies

_BEDROCK_USAGE = {"inputTokens": 13, "outputTokens": 82, "totalTokens": 95}


def _bedrock_reply(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop,
            "usage": _BEDROCK_USAGE, "metrics": {"latencyMs": 391}}  # fmt: skip


def _bedrock_text(text: str) -> dict[str, Any]:
    return _bedrock_reply([{"text": text}], "end_turn")


def _bedrock_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    blocks = [{"toolUse": {"toolUseId": call_id, "name": name, "input": args}} for call_id, name, args in calls]
    return _bedrock_reply(blocks, "tool_use")


def split_frames(body: bytes) -> list[bytes]:
    """The messages of an event-stream body, each whole (for the loopback server's one chunk each)."""
    out, at = [], 0
    while at < len(body):
        (total,) = struct.unpack(">I", body[at : at + 4])
        out.append(body[at : at + total])
        at += total
    return out


# ----------------------------------------------------------------------------------- the scripts


def _calls(prefix: str) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    return {
        "s2": [(f"{prefix}Weather01", "get_weather", {"city": "Paris"})],
        "s3": [(f"{prefix}Lookup0{i}", "lookup", {"key": key}) for i, key in enumerate(S3_KEYS)],
        "s7confirm": [(f"{prefix}Booking01", "book_flight", {"flight": "VX205"})],
        "s7tools50": [(f"{prefix}Forecast07", TOOLS50_CALLED, {"city": "Paris", "days": 3})],
        **{
            f"loop{n}": [(f"{prefix}Loop0{n}", loop_name(0), {"city": "Paris", "days": n})]
            for n in range(1, LOOP_ROUNDS)
        },
    }


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


_OPENAI_CALLS = _calls("call_bhZkmIKKItNGJ41w")
_BEDROCK_CALLS = _calls("tooluse_lAG_zP8QRHmSYOwZ")
_ANTHROPIC_CALLS = _calls("toolu_01Ay5KzhmQYMK53s")

REPLIES: dict[str, dict[str, bytes]] = {
    "openai": {
        "text": _dump(_openai_text(TEXT)),
        "final": _dump(_openai_text(FINAL)),
        **{name: _dump(_openai_calls(calls)) for name, calls in _OPENAI_CALLS.items()},
    },
    "anthropic": {
        "text": _dump(_anthropic_text(TEXT)),
        "final": _dump(_anthropic_text(FINAL)),
        **{name: _dump(_anthropic_calls(calls)) for name, calls in _ANTHROPIC_CALLS.items()},
    },
    "gemini": {
        "text": _dump(_gemini_text(TEXT)),
        "final": _dump(_gemini_text(FINAL)),
        **{name: _dump(_gemini_calls(calls)) for name, calls in _calls("").items()},
    },
    "bedrock": {
        "text": _dump(_bedrock_text(TEXT)),
        "final": _dump(_bedrock_text(FINAL)),
        **{name: _dump(_bedrock_calls(calls)) for name, calls in _BEDROCK_CALLS.items()},
    },
}


def _delta_text(i: int) -> str:
    return f"w{i} "


STREAM_TEXT = "".join(_delta_text(i) for i in range(STREAM_DELTAS))


def openai_stream(n: int = STREAM_DELTAS) -> bytes:
    base = {
        "id": "chatcmpl-CoDWl5rS0pF10P0W0TDVgY3NA26dk",
        "object": "chat.completion.chunk",
        "created": 1766084435,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_deacdd5f6f",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], "usage": None, "obfuscation": "nYdSaPIbhl"}

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": _delta_text(i)}) for i in range(n)]
    events.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 14, "completion_tokens": n, "total_tokens": n + 14}
    events.append({**base, "choices": [], "usage": usage, "obfuscation": "Mi59qh"})
    return b"".join(b"data: " + _dump(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def anthropic_stream(n: int = STREAM_DELTAS) -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "model": "claude-haiku-4-5-20251001",
            "id": "msg_018bk6q16LtrDpGDm6TyXTgn",
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 17, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 1, "service_tier": "standard"},
        },
    }  # fmt: skip
    block_start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", start), ("content_block_start", block_start)]
    for i in range(n):
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": _delta_text(i)}}
        events.append(("content_block_delta", delta))
        if i == n // 2:
            events.append(("ping", {"type": "ping"}))
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"input_tokens": 17, "output_tokens": n}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return b"".join(b"event: " + name.encode() + b"\ndata: " + _dump(data) + b"\n\n" for name, data in events)


def gemini_stream(n: int = STREAM_DELTAS) -> bytes:
    """``streamGenerateContent?alt=sse``: every chunk a whole response with its piece and the usage so
    far, the last with the finish reason (the API separates events with CRLF; LF here, as the
    loopback server splits events on it, and every SSE reader takes both)."""
    events = [_gemini_response([{"text": _delta_text(i)}], None, i + 1) for i in range(n)]
    events[-1] = _gemini_response([{"text": _delta_text(n - 1)}], "STOP", n)
    return b"".join(b"data: " + _dump(e) + b"\n\n" for e in events)


def bedrock_stream(n: int = STREAM_DELTAS) -> bytes:
    """``ConverseStream``: one event-stream message per event (``p`` is the padding Bedrock adds to
    each payload), ``messageStop`` then ``metadata`` with the usage."""
    frames = [encode_event("messageStart", b'{"p":"abcdefghijklmnopqr","role":"assistant"}')]
    for i in range(n):
        delta = {"contentBlockIndex": 0, "delta": {"text": _delta_text(i)}, "p": "abcdefghijklmn"}
        frames.append(encode_event("contentBlockDelta", _dump(delta)))
    frames.append(encode_event("contentBlockStop", b'{"contentBlockIndex":0,"p":"abcdefghij"}'))
    frames.append(encode_event("messageStop", b'{"p":"abcdefgh","stopReason":"end_turn"}'))
    frames.append(encode_event("metadata", _dump({"metrics": {"latencyMs": 391}, "usage": _BEDROCK_USAGE})))
    return b"".join(frames)


STREAMS: dict[str, bytes] = {"openai": openai_stream(), "anthropic": anthropic_stream(), "gemini": gemini_stream(),
                             "bedrock": bedrock_stream()}  # fmt: skip

JSON_HEADERS = (
    ("content-type", "application/json"),
    ("x-request-id", "req_dd792cdddf7845ec888b05e89c829478"),
    ("request-id", "req_011CWF2CNoHfDY1Jfot98FQo"),
)
SSE_HEADERS = (
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
    ("x-request-id", "req_14db9386e2cc461ca7246f851dca7b70"),
    ("request-id", "req_011CWF2DKFkB8ogPFf2UsrA8"),
)
EVENTSTREAM_HEADERS = (
    ("content-type", "application/vnd.amazon.eventstream"),
    ("x-amzn-requestid", "b3f4c2d1-0000-4000-8000-000000000000"),
)


def headers_for(path: str, stream: bool) -> tuple[tuple[str, str], ...]:
    """The reply's headers: JSON, SSE, or (a Bedrock stream) the event stream's."""
    if not stream:
        return JSON_HEADERS
    return EVENTSTREAM_HEADERS if path.endswith(_BEDROCK_STREAM) else SSE_HEADERS


# Markers searched for in request bodies (whitespace-agnostic: only the quoted tokens).
_TOOL_RESULT = {"openai": b'"tool_call_id"', "anthropic": b'"tool_result"', "gemini": b'"functionResponse"',
                "bedrock": b'"toolResult"'}  # fmt: skip
_SCRIPTS = (
    (b'"get_weather"', "s2"),
    (b'"lookup"', "s3"),
    (b'"book_flight"', "s7confirm"),
    (b'"tool_00"', "s7tools50"),
)
_STREAM_TRUE = (b'"stream":true', b'"stream": true')


_GEMINI_STREAM = ":streamGenerateContent"
_BEDROCK_STREAM = "/converse-stream"


def wire_of(path: str) -> str:
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith(("/converse", _BEDROCK_STREAM)):
        return "bedrock"
    return "gemini" if path.endswith((":generateContent", _GEMINI_STREAM)) else "openai"


_CATALOG = b'"catalog_000"'
_LOOP = b'"loop_00"'


def route(path: str, body: bytes) -> tuple[bytes, bool]:
    """The reply for one request: (body bytes, is an SSE stream)."""
    wire = wire_of(path)
    replies = REPLIES[wire]
    if _LOOP in body:
        done = body.count(_TOOL_RESULT[wire])
        return (replies[f"loop{done + 1}"] if done < LOOP_ROUNDS - 1 else replies["final"]), False
    if _CATALOG in body:
        return replies["text"], False
    if _TOOL_RESULT[wire] in body:
        return replies["final"], False
    for marker, script in _SCRIPTS:
        if marker in body:
            return replies[script], False
    if path.endswith((_GEMINI_STREAM, _BEDROCK_STREAM)) or any(marker in body for marker in _STREAM_TRUE):
        return STREAMS[wire], True
    return replies["text"], False
