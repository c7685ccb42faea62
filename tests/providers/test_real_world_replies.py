"""Replies from servers beyond OpenAI's own, on the wire as those servers send them (no recording of
them exists in the fixtures): DeepSeek's reasoning round trip, Mistral's chunked content, Anthropic's
server tools and thinking tokens, and the one refusal rule of every provider."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient import FinishReason, Prompt
from chatclient.events import ModelEvent
from chatclient.messages import AssistantMessage, ToolResponse, ToolResponseMessage, UserMessage
from chatclient.responses import ChatResponse
from providers.anthropic import AnthropicChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel
from tests.providers.model_events import assemble, reasoning, texts


def sse(events: list[tuple[str | None, dict[str, Any]]], *, done: bool = False) -> bytes:
    out = "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events)
    return (out + ("data: [DONE]\n\n" if done else "")).encode()


class Wire:
    """A MockTransport that answers each request with the next canned reply and keeps the bodies."""

    def __init__(self, *replies: tuple[str, bytes]) -> None:
        self.replies = list(replies)
        self.bodies: list[Any] = []
        self.headers: list[httpx2.Headers] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.headers.append(request.headers)
        content_type, payload = self.replies.pop(0)
        return httpx2.Response(200, headers={"content-type": content_type}, content=payload)

    def clients(self) -> dict[str, Any]:
        transport = httpx2.MockTransport(self.handle)
        return {
            "http_client": httpx2.Client(transport=transport),
            "async_http_client": httpx2.AsyncClient(transport=transport),
        }


def run(model: Any, prompt: Prompt, stream: bool) -> ChatResponse:
    if stream:
        events: list[ModelEvent] = list(model.stream(prompt))
        return assemble(events)
    response: ChatResponse = model.call(prompt)
    return response


def follow_up(answer: ChatResponse) -> Prompt:
    """The next round's prompt: the question, the assistant's tool call, the tool's result."""
    assert answer.result is not None
    call = answer.result.output.tool_calls[0]
    return Prompt(
        [
            UserMessage("Weather in Paris?"),
            answer.result.output,
            ToolResponseMessage([ToolResponse(id=call.id, name=call.name, response_data="sunny")]),
        ]
    )


# ------------------------------------------------------------------ DeepSeek: reasoning sent back

DEEPSEEK_CALL: dict[str, Any] = {
    "id": "d1",
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning_content": "The user wants the weather; call the tool.",
                "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "weather", "arguments": '{"c":"P"}'}}
                ],
            },
        }
    ],
}


def _streamed(message: dict[str, Any], reasoning_key: str) -> bytes:
    first = {"role": "assistant", reasoning_key: message[reasoning_key][:10]}
    second = {reasoning_key: message[reasoning_key][10:]}
    calls = [{"index": 0, **message["tool_calls"][0]}]
    chunk = {"id": "d1", "model": "m"}
    return sse(
        [
            (None, {**chunk, "choices": [{"index": 0, "delta": first}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": second}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": calls}}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ],
        done=True,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_is_sent_back_under_the_field_the_server_used(key: str, stream: bool) -> None:
    message = dict(DEEPSEEK_CALL["choices"][0]["message"])
    if key != "reasoning_content":
        message[key] = message.pop("reasoning_content")
    data = {**DEEPSEEK_CALL, "choices": [{**DEEPSEEK_CALL["choices"][0], "message": message}]}
    first = (
        ("text/event-stream", _streamed(message, key)) if stream else ("application/json", json.dumps(data).encode())
    )
    wire = Wire(first, ("application/json", json.dumps(data).encode()))
    model = OpenAIChatModel("deepseek-reasoner", base_url="https://api.deepseek.com", api_key="k", **wire.clients())
    answer = run(model, Prompt("Weather in Paris?"), stream)
    assert answer.result is not None and answer.result.output.metadata["reasoning_field"] == key
    model.call(follow_up(answer))
    assistant = wire.bodies[1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["tool_calls"]
    assert assistant[key] == "The user wants the weather; call the tool."
    assert {"reasoning_content", "reasoning"} - {key} - set(assistant) == {"reasoning_content", "reasoning"} - {key}


def test_reasoning_is_not_sent_on_a_plain_answer_turn() -> None:
    wire = Wire(("application/json", b"{}"))
    wire.replies = [("application/json", json.dumps(DEEPSEEK_CALL).encode())]
    model = OpenAIChatModel("m", base_url="https://api.deepseek.com", api_key="k", **wire.clients())
    answered = AssistantMessage("It is sunny.", metadata={"reasoning": "r", "reasoning_field": "reasoning_content"})
    model.call(Prompt([UserMessage("q"), answered, UserMessage("thanks")]))
    assert "reasoning_content" not in wire.bodies[0]["messages"][1]


# ------------------------------------------------------------------ Mistral: list-valued content

MAGISTRAL_CONTENT = [
    {"type": "thinking", "thinking": [{"type": "text", "text": "Two plus two "}, {"type": "text", "text": "is four."}]},
    {"type": "text", "text": "The answer "},
    {"type": "text", "text": "is 4."},
]


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_list_valued_content_joins_the_text_and_keeps_the_thinking_as_reasoning(stream: bool) -> None:
    if stream:
        chunk = {"id": "m1", "model": "magistral-medium"}
        payload = sse(
            [
                (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
                (None, {**chunk, "choices": [{"index": 0, "delta": {"content": MAGISTRAL_CONTENT[:1]}}]}),
                (None, {**chunk, "choices": [{"index": 0, "delta": {"content": MAGISTRAL_CONTENT[1:2]}}]}),
                (None, {**chunk, "choices": [{"index": 0, "delta": {"content": "is 4."}, "finish_reason": "stop"}]}),
            ],
            done=True,
        )
        wire = Wire(("text/event-stream", payload))
    else:
        reply = {
            "id": "m1",
            "model": "magistral-medium",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": MAGISTRAL_CONTENT}}],
        }
        wire = Wire(("application/json", json.dumps(reply).encode()))
    model = OpenAIChatModel("magistral-medium", base_url="https://api.mistral.ai/v1", api_key="k", **wire.clients())
    if stream:
        events = list(model.stream(Prompt("2+2?")))
        assert texts(events) == ["The answer ", "is 4."]
        assert reasoning(events) == ["Two plus two is four."]
        answer = assemble(events)
    else:
        answer = model.call(Prompt("2+2?"))
    assert answer.text == "The answer is 4."
    assert answer.result is not None
    assert answer.result.output.metadata["reasoning"] == "Two plus two is four."
    assert "reasoning_field" not in answer.result.output.metadata  # not a field to echo


# ------------------------------------------------------------------ refusals: one rule


def _chat_refusal(stream: bool) -> tuple[Callable[[Wire], Any], tuple[str, bytes]]:
    if stream:
        chunk = {"id": "r1", "model": "gpt-4o"}
        payload = sse(
            [
                (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "refusal": "I can't "}}]}),
                (None, {**chunk, "choices": [{"index": 0, "delta": {"refusal": "help."}, "finish_reason": "stop"}]}),
            ],
            done=True,
        )
        reply = ("text/event-stream", payload)
    else:
        message = {"role": "assistant", "content": None, "refusal": "I can't help."}
        data = {"id": "r1", "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
        reply = ("application/json", json.dumps(data).encode())
    return (lambda wire: OpenAIChatModel("gpt-4o", api_key="k", **wire.clients())), reply


def _responses_refusal(stream: bool) -> tuple[Callable[[Wire], Any], tuple[str, bytes]]:
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help."}],
    }
    response = {"id": "resp_1", "model": "gpt-5", "status": "completed", "output": [item]}
    if stream:
        payload = sse(
            [
                ("response.created", {"type": "response.created", "response": {**response, "output": []}}),
                ("response.refusal.delta", {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "I can't "}),
                ("response.refusal.delta", {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "help."}),
                ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
                ("response.completed", {"type": "response.completed", "response": response}),
            ]
        )
        reply = ("text/event-stream", payload)
    else:
        reply = ("application/json", json.dumps(response).encode())
    return (lambda wire: OpenAIResponsesChatModel("gpt-5", api_key="k", **wire.clients())), reply


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("case", [_chat_refusal, _responses_refusal], ids=["chat", "responses"])
def test_a_refusal_is_kept_out_of_the_text_and_finishes_with_content_filter(
    case: Callable[[bool], tuple[Callable[[Wire], Any], tuple[str, bytes]]], stream: bool
) -> None:
    make, reply = case(stream)
    wire = Wire(reply)
    answer = run(make(wire), Prompt("Help me with something bad"), stream)
    assert answer.result is not None
    assert not answer.text
    assert answer.result.finish_reason is FinishReason.CONTENT_FILTER
    assert answer.result.output.metadata["refusal"] == "I can't help."


# ------------------------------------------------------------------ Anthropic: server tools, thinking tokens

SERVER_TOOL_USE = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "paris"}}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": [{"type": "web_search_result", "url": "https://example.org", "title": "P", "encrypted_content": "e"}],
}
CLAUDE_USAGE = {"input_tokens": 10, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 30}}


def _claude_stream() -> bytes:
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude", "content": []}
    start_use = {**SERVER_TOOL_USE, "input": {}}
    events: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {**message, "usage": {"input_tokens": 10}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start_use}),
    ]
    for piece in ('{"query": ', '"paris"}'):
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": SEARCH_RESULT}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {"type": "text"}}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Sunny."}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": CLAUDE_USAGE}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_anthropic_server_tool_blocks_are_kept_and_sent_back(stream: bool) -> None:
    if stream:
        first = ("text/event-stream", _claude_stream())
    else:
        content = [SERVER_TOOL_USE, SEARCH_RESULT, {"type": "text", "text": "Sunny."}]
        data = {"id": "msg_01", "type": "message", "model": "claude", "content": content, "stop_reason": "end_turn"}
        first = ("application/json", json.dumps({**data, "usage": CLAUDE_USAGE}).encode())
    final = {"id": "msg_02", "type": "message", "model": "claude", "content": [{"type": "text", "text": "ok"}]}
    wire = Wire(first, ("application/json", json.dumps(final).encode()))
    model = AnthropicChatModel("claude", api_key="k", **wire.clients())
    answer = run(model, Prompt("Weather in Paris?"), stream)
    assert answer.text == "Sunny."
    assert answer.result is not None
    assert answer.result.output.metadata["anthropic_server_blocks"] == [SERVER_TOOL_USE, SEARCH_RESULT]
    assert answer.metadata.usage is not None and answer.metadata.usage.reasoning_tokens == 30
    model.call(Prompt([UserMessage("Weather in Paris?"), answer.result.output, UserMessage("And tomorrow?")]))
    assert wire.bodies[1]["messages"][1]["content"] == [
        SERVER_TOOL_USE,
        SEARCH_RESULT,
        {"type": "text", "text": "Sunny."},
    ]
