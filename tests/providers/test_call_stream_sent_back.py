"""Property: what a reply sends back on the next request is the same whether it was called or streamed.

Every recorded successful Responses reply is replayed both ways: a recorded response object is
called as recorded and streamed as the events the API sends for it (hypothesis draws where the
deltas split and whether the item announcements carry the item's content), and a recorded stream is
streamed as recorded and called as the response object of its ``response.completed``. The next
request, built from the reply's message (its tool calls answered), must be the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatclient import Prompt
from chatclient.errors import BadRequestError
from chatclient.messages import Message, ToolResponse, ToolResponseMessage, UserMessage
from chatclient.model import ChatModel
from chatclient.responses import ChatResponse
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel, OpenAIResponsesChatOptions
from tests.providers import wire_forms
from tests.providers.fixtures import fixture_files, interactions
from tests.providers.model_events import assemble

FOLDER = "openai-responses"


def _recorded_replies() -> list[tuple[str, int]]:
    found = []
    for name in fixture_files(FOLDER):
        for index, interaction in enumerate(interactions(FOLDER, name)):
            if interaction["response"]["status"] == 200:
                found.append((name, index))
    return found


REPLIES = _recorded_replies()


def _events(sse: str) -> list[dict[str, Any]]:
    events = []
    for block in sse.split("\n\n"):
        data = [line[len("data: ") :] for line in block.splitlines() if line.startswith("data: ")]
        if data:
            events.append(json.loads("".join(data)))
    return events


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _pieces(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts`` (positions modulo its length): never an empty piece but for an empty text."""
    points = sorted({c % len(text) for c in cuts if text and c % len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in pairwise(bounds)] or [text]


def _stream_of(response: dict[str, Any], cuts: list[int], bare_added: bool) -> list[dict[str, Any]]:
    """The events the API streams for ``response``: its items announced, their text, refusal,
    arguments and reasoning summary as deltas cut at ``cuts``, each item whole when done."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(response["output"]):
        added = dict(item)
        if bare_added and item.get("type") == "message":
            added["content"] = []
        if bare_added and item.get("type") == "function_call":
            added["arguments"] = ""
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        where = {"item_id": item.get("id"), "output_index": index}
        for part in item.get("content") or [] if item.get("type") == "message" else []:
            kind, key = ("output_text", "text") if part.get("type") == "output_text" else ("refusal", "refusal")
            events += [{"type": f"response.{kind}.delta", **where, "delta": p} for p in _pieces(part[key], cuts)]
        if item.get("type") == "reasoning":
            for summary in item.get("summary") or []:
                events += [
                    {"type": "response.reasoning_summary_text.delta", **where, "delta": p}
                    for p in _pieces(summary["text"], cuts)
                ]
        if item.get("type") == "function_call":
            if bare_added:
                events += [
                    {"type": "response.function_call_arguments.delta", **where, "delta": p}
                    for p in _pieces(item["arguments"], cuts)
                ]
            events.append({"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return events


class Served:
    """Answers the first request with ``reply`` and every later one with a plain answer; keeps the requests."""

    def __init__(self, reply: httpx2.Response) -> None:
        self.reply = reply
        self.sent: list[bytes] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(request.content)
        if len(self.sent) == 1:
            return self.reply
        done = {"id": "resp_next", "model": "m", "status": "completed", "output": [_message("ok")]}
        return httpx2.Response(200, json=done)


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_x", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _next_request(reply: httpx2.Response, *, stream: bool, store: bool) -> bytes:
    served = Served(reply)
    model = OpenAIResponsesChatModel(
        "gpt-5", api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(served))
    )
    options = OpenAIResponsesChatOptions(store=store)
    question: list[Message] = [UserMessage("the recorded question")]
    first: ChatResponse = (
        assemble(list(model.stream(Prompt(question, options)))) if stream else model.call(Prompt(question, options))
    )
    assert first.result is not None
    answer = first.result.output
    history: list[Message] = [*question, answer]
    if answer.tool_calls:
        history.append(
            ToolResponseMessage([ToolResponse(id=c.id, name=c.name, response_data="done") for c in answer.tool_calls])
        )
    history.append(UserMessage("and then?"))
    model.call(Prompt(history, options))
    return served.sent[1]


def _both_ways(name: str, index: int, cuts: list[int], bare_added: bool) -> tuple[httpx2.Response, httpx2.Response]:
    """The recorded reply as a response object (for a call) and as a stream (for ``stream()``)."""
    recorded = interactions(FOLDER, name)[index]["response"]
    if "sse" in recorded:
        events = _events(recorded["sse"])
        body = next(e["response"] for e in events if e["type"] == "response.completed")
        streamed = recorded["sse"].encode()
    else:
        body = recorded["body"]
        streamed = _sse(_stream_of(body, cuts, bare_added))
    sse_headers = {"content-type": "text/event-stream"}
    return httpx2.Response(200, json=body), httpx2.Response(200, headers=sse_headers, content=streamed)


@pytest.mark.parametrize(("name", "index"), REPLIES, ids=[f"{n}-{i}" for n, i in REPLIES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=6), bare_added=st.booleans(), store=st.booleans()
)
def test_a_recorded_reply_sends_back_the_same_bytes_called_or_streamed(
    name: str, index: int, cuts: list[int], bare_added: bool, store: bool
) -> None:
    called, streamed = _both_ways(name, index, cuts, bare_added)
    assert _next_request(streamed, stream=True, store=store) == _next_request(called, stream=False, store=store)


REASONING_WITH_REFUSAL = {
    "id": "resp_r",
    "model": "o4-mini",
    "status": "completed",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "The request is unsafe."}],
            "encrypted_content": "gAAAA-opaque",
        },
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    ],
}


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_a_refusal_after_reasoning_keeps_every_reasoning_field_and_the_same_text(stream: bool) -> None:
    served = Served(
        httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=_sse(_stream_of(REASONING_WITH_REFUSAL, [3], True)),
        )
        if stream
        else httpx2.Response(200, json=REASONING_WITH_REFUSAL)
    )
    model = OpenAIResponsesChatModel(
        "o4-mini", api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(served))
    )
    prompt = Prompt("help me do harm")
    reply = assemble(list(model.stream(prompt))) if stream else model.call(prompt)
    assert reply.result is not None
    message = reply.result.output
    assert message.metadata["refusal"] == "No."
    assert message.metadata["openai_responses.reasoning"] == [REASONING_WITH_REFUSAL["output"][0]]
    assert message.text is None


EMPTY_MESSAGE = {
    "id": "resp_e",
    "model": "gpt-5",
    "status": "completed",
    "output": [
        {"type": "message", "id": "msg_e", "role": "assistant", "content": [{"type": "output_text", "text": ""}]}
    ],
}


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_an_empty_message_is_empty_text_called_or_streamed(stream: bool) -> None:
    """A message item with no text is ``""`` (a reply that said nothing), not ``None`` (no message)."""
    events = _stream_of(EMPTY_MESSAGE, [], True)
    sse_headers = {"content-type": "text/event-stream"}
    reply = (
        httpx2.Response(200, headers=sse_headers, content=_sse(events))
        if stream
        else httpx2.Response(200, json=EMPTY_MESSAGE)
    )
    model = OpenAIResponsesChatModel(
        "gpt-5", api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(lambda _: reply))
    )
    answer = assemble(list(model.stream(Prompt("q")))) if stream else model.call(Prompt("q"))
    assert answer.result is not None and answer.result.output.text == ""


# ------------------------------------------------------------------ the other three wire APIs


def _other_model(folder: str, name: str, client: httpx2.Client) -> ChatModel:
    if folder == "anthropic":
        return AnthropicChatModel("claude-x", api_key="k", http_client=client)
    if folder == "ollama" and name.startswith("native"):
        return OllamaChatModel("m", base_url="http://localhost:11434", http_client=client)
    base = "http://localhost:11434/v1" if folder == "ollama" else "https://api.openai.com/v1"
    return OpenAIChatModel("m", api_key="k", base_url=base, http_client=client)


def _forms(
    folder: str, name: str
) -> tuple[Callable[[dict[str, Any], list[int]], bytes], Callable[[str], dict[str, Any]], str]:
    """The converters of one folder's wire API: whole reply → stream, stream → whole reply, stream content type."""
    if folder == "anthropic":
        return wire_forms.anthropic_stream, wire_forms.anthropic_body, "text/event-stream"
    if folder == "ollama" and name.startswith("native"):
        return wire_forms.ollama_stream, wire_forms.ollama_body, "application/x-ndjson"
    return wire_forms.chat_stream, wire_forms.chat_body, "text/event-stream"


OTHERS = [
    (folder, name, index)
    for folder in ("openai-chat", "anthropic", "ollama")
    for name in fixture_files(folder)
    if not name.startswith("embed_")  # Ollama's /api/embed recordings: no chat reply to send back
    for index, interaction in enumerate(interactions(folder, name))
    if interaction["response"]["status"] == 200
]


def _sent_back(folder: str, name: str, reply: httpx2.Response, *, stream: bool) -> bytes:
    """The request that follows ``reply`` (its tool calls answered), built by the folder's model."""
    sent: list[bytes] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.content)
        return reply if len(sent) == 1 else httpx2.Response(400, json={"error": {"message": "enough"}})

    model = _other_model(folder, name, httpx2.Client(transport=httpx2.MockTransport(handle)))
    question: list[Message] = [UserMessage("the recorded question")]
    first = assemble(list(model.stream(Prompt(question)))) if stream else model.call(Prompt(question))
    assert first.result is not None
    answer = first.result.output
    history: list[Message] = [*question, answer]
    if answer.tool_calls:
        history.append(
            ToolResponseMessage([ToolResponse(id=c.id, name=c.name, response_data="done") for c in answer.tool_calls])
        )
    history.append(UserMessage("and then?"))
    with pytest.raises(BadRequestError):
        model.call(Prompt(history))
    return sent[1]


@pytest.mark.parametrize(("folder", "name", "index"), OTHERS, ids=[f"{f}-{n}-{i}" for f, n, i in OTHERS])
@settings(max_examples=10, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=6))
def test_every_other_recorded_reply_sends_back_the_same_bytes_called_or_streamed(
    folder: str, name: str, index: int, cuts: list[int]
) -> None:
    recorded = interactions(folder, name)[index]["response"]
    to_stream, to_body, content_type = _forms(folder, name)
    if "body" in recorded:
        body = recorded["body"]
        streamed = to_stream(body, cuts)
    else:
        text = recorded.get("sse") or recorded["ndjson"]
        body, streamed = to_body(text), text.encode()
    called = httpx2.Response(200, json=body)
    stream = httpx2.Response(200, headers={"content-type": content_type}, content=streamed)
    assert _sent_back(folder, name, stream, stream=True) == _sent_back(folder, name, called, stream=False)
