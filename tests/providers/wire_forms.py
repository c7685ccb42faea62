"""One recorded reply in both of its wire forms: a whole reply (for ``call``) as the events a server
streams for it, and a recorded stream as the whole reply a server sends for it, for Chat Completions,
Anthropic Messages and Ollama's native API. The stream side cuts text and arguments where a test
asks, so a property test can try many cuts of one reply."""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any


def pieces(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts`` (positions modulo its length): never an empty piece but for an empty text."""
    points = sorted({c % len(text) for c in cuts if text and c % len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)] or [text]


def sse_data(text: str) -> list[Any]:
    """The JSON ``data:`` of each event of an SSE body (``[DONE]`` left out)."""
    found = []
    for block in text.split("\n\n"):
        data = "".join(line[len("data: ") :] for line in block.splitlines() if line.startswith("data: "))
        if data and data != "[DONE]":
            found.append(json.loads(data))
    return found


def sse(events: list[dict[str, Any]], *, named: bool, done: bool) -> bytes:
    out = "".join((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events)
    return (out + ("data: [DONE]\n\n" if done else "")).encode()


# ------------------------------------------------------------------ Chat Completions


def chat_stream(body: dict[str, Any], cuts: list[int]) -> bytes:
    head = {"id": body.get("id"), "object": "chat.completion.chunk", "model": body.get("model")}
    chunks: list[dict[str, Any]] = []
    for choice in body["choices"]:
        message, index = choice["message"], choice["index"]
        chunks.append({**head, "choices": [{"index": index, "delta": {"role": "assistant"}}]})
        for key in ("reasoning_content", "reasoning", "content", "refusal"):
            if isinstance(message.get(key), str):
                for piece in pieces(message[key], cuts):
                    chunks.append({**head, "choices": [{"index": index, "delta": {key: piece}}]})
        for n, call in enumerate(message.get("tool_calls") or []):
            first = {
                "index": n,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            chunks.append({**head, "choices": [{"index": index, "delta": {"tool_calls": [first]}}]})
            for piece in pieces(call["function"]["arguments"], cuts):
                fragment = {"index": n, "function": {"arguments": piece}}
                chunks.append({**head, "choices": [{"index": index, "delta": {"tool_calls": [fragment]}}]})
        chunks.append({**head, "choices": [{"index": index, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if body.get("usage"):
        chunks.append({**head, "choices": [], "usage": body["usage"]})
    return sse(chunks, named=False, done=True)


def chat_body(stream: str) -> dict[str, Any]:
    chunks = sse_data(stream)
    messages: dict[int, dict[str, Any]] = {}
    finish: dict[int, str] = {}
    usage = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            message = messages.setdefault(choice["index"], {"role": "assistant", "content": None})
            delta = choice.get("delta") or {}
            for key in ("reasoning_content", "reasoning", "content", "refusal"):
                if isinstance(delta.get(key), str):
                    message[key] = (message.get(key) or "") + delta[key]
            for fragment in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                while len(calls) <= fragment["index"]:
                    calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                call = calls[fragment["index"]]
                call["id"] = fragment.get("id") or call["id"]
                function = fragment.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                finish[choice["index"]] = choice["finish_reason"]
    head = chunks[0]
    choices = [{"index": i, "message": m, "finish_reason": finish.get(i)} for i, m in sorted(messages.items())]
    return {
        "id": head.get("id"),
        "object": "chat.completion",
        "model": head.get("model"),
        "choices": choices,
        "usage": usage,
    }


# ------------------------------------------------------------------ Anthropic Messages


def anthropic_stream(body: dict[str, Any], cuts: list[int]) -> bytes:
    start = {k: v for k, v in body.items() if k not in ("content", "stop_reason", "stop_sequence")}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**start, "content": [], "stop_reason": None}}]
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
                for p in pieces(block["text"], cuts)
            ]
        elif kind == "tool_use":
            events.append({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"])
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                }
                for p in pieces(arguments, cuts)
            ]
        elif kind == "thinking":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}
                for p in pieces(block["thinking"], cuts)
            ]
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block.get("signature", "")},
                }
            )
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")}
    events.append({"type": "message_delta", "delta": delta, "usage": body.get("usage") or {}})
    events.append({"type": "message_stop"})
    return sse(events, named=True, done=False)


def anthropic_body(stream: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in sse_data(stream):
        kind = event["type"]
        if kind == "message_start":
            body = dict(event["message"])
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif kind == "message_delta":
            body.update(event["delta"])
            body["usage"] = {**(body.get("usage") or {}), **(event.get("usage") or {})}
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text) if text else {}
    body["content"] = [blocks[i] for i in sorted(blocks)]
    return body


# ------------------------------------------------------------------ Ollama's native API


def ollama_stream(body: dict[str, Any], cuts: list[int]) -> bytes:
    head = {"model": body.get("model"), "created_at": body.get("created_at")}
    message = body["message"]
    lines: list[dict[str, Any]] = []
    for key in ("thinking", "content"):
        if message.get(key):
            lines += [
                {**head, "message": {"role": "assistant", "content": "", key: p}, "done": False}
                for p in pieces(message[key], cuts)
            ]
    if message.get("tool_calls"):
        lines.append(
            {
                **head,
                "message": {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]},
                "done": False,
            }
        )
    last = {k: v for k, v in body.items() if k != "message"}
    lines.append({**last, "message": {"role": "assistant", "content": ""}, "done": True})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def ollama_body(stream: str) -> dict[str, Any]:
    lines = [json.loads(line) for line in stream.splitlines() if line.strip()]
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    for line in lines:
        part = line.get("message") or {}
        message["content"] += part.get("content") or ""
        if part.get("thinking"):
            message["thinking"] = message.get("thinking", "") + part["thinking"]
        if part.get("tool_calls"):
            message.setdefault("tool_calls", []).extend(part["tool_calls"])
    return {**lines[-1], "message": message}
