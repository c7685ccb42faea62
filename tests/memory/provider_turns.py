"""Turns parsed from the recorded provider traffic by each provider's own mapping, for the
repository contract's lossless test: what a store must keep is what the providers write.

Recorded (``tests/fixtures/provider-traffic``): OpenAI Chat tool calls, Ollama's OpenAI layer with
``reasoning`` and parallel tool calls, Responses with encrypted reasoning, Anthropic tool use (one
and parallel), Ollama native tool call and answer, Gemini's signed parallel calls and thought
parts. No recording exists of DeepSeek's
``reasoning_content``, Anthropic thinking and server-tool blocks, or Responses built-in tool items
(the fixtures' README lists its gaps), so those replies are written in the shape the providers
document, and parsed by the same mappings: their metadata is still the providers' own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx2

from chatclient import Prompt
from chatclient.messages import AssistantMessage, Message, ToolResponse, ToolResponseMessage, UserMessage
from chatclient.testing.memory import ProviderTurn
from providers.anthropic import AnthropicChatModel
from providers.gemini import GeminiChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel
from tests.providers.fixtures import interactions, load, recorded_response

Handler = Callable[[httpx2.Request], httpx2.Response]
ModelFactory = Callable[[httpx2.Client], Any]


def _json(body: dict[str, Any]) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=json.dumps(body).encode())


def _parsed_turn(make: ModelFactory, replies: Sequence[httpx2.Response], question: str) -> list[Message]:
    """The turn the replies make: the question, each reply as the mapping parsed it, a result for
    each of its tool calls."""
    messages: list[Message] = [UserMessage(question)]
    for reply in replies:
        model = make(httpx2.Client(transport=httpx2.MockTransport(lambda _request, reply=reply: reply)))
        response = model.call(Prompt(list(messages)))
        assert response.result is not None
        answer: AssistantMessage = response.result.output
        messages.append(answer)
        if answer.tool_calls:
            results = [ToolResponse(id=c.id, name=c.name, response_data=f"{c.name}: done") for c in answer.tool_calls]
            messages.append(ToolResponseMessage(results))
    return messages


def _renderer(make: ModelFactory, reply: httpx2.Response) -> Callable[[Sequence[Message]], bytes]:
    """The bytes the provider sends when these messages are the history of the next question."""

    def next_request(history: Sequence[Message]) -> bytes:
        sent: list[bytes] = []

        def handler(request: httpx2.Request) -> httpx2.Response:
            sent.append(request.content)
            return reply

        make(httpx2.Client(transport=httpx2.MockTransport(handler))).call(Prompt([*history, UserMessage("Thanks!")]))
        return sent[0]

    return next_request


def _recorded(
    provider: str, names: Sequence[str], make: ModelFactory, question: str, *, indices: Sequence[int] | None = None
) -> ProviderTurn:
    recorded = [i for name in names for i in interactions(provider, name)]
    replies = [recorded_response(recorded[k]) for k in (indices if indices is not None else range(len(recorded)))]
    sources = ", ".join(f"{provider}/{n}.yaml ({load(provider, n)['source']['repository']})" for n in names)
    return ProviderTurn(
        f"{provider}/{names[0]}",
        _parsed_turn(make, replies, question),
        _renderer(make, replies[-1]),
        source=sources,
    )


def _written(name: str, make: ModelFactory, bodies: Sequence[dict[str, Any]], question: str) -> ProviderTurn:
    replies = [_json(body) for body in bodies]
    return ProviderTurn(
        name, _parsed_turn(make, replies, question), _renderer(make, replies[-1]), "wire shape, unrecorded"
    )


def _openai(model: str, base_url: str | None = None) -> ModelFactory:
    return lambda client: OpenAIChatModel(model, api_key="k", http_client=client, base_url=base_url)


def _responses(client: httpx2.Client) -> Any:
    return OpenAIResponsesChatModel("gpt-5-nano", api_key="k", http_client=client)


def _anthropic(client: httpx2.Client) -> Any:
    return AnthropicChatModel("claude-sonnet-4-0", api_key="k", http_client=client)


def _gemini(client: httpx2.Client) -> Any:
    return GeminiChatModel("gemini-2.5-flash", api_key="k", http_client=client)


def _ollama(client: httpx2.Client) -> Any:
    return OllamaChatModel("llama3.1", http_client=client)


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
DEEPSEEK_ANSWER: dict[str, Any] = {
    "id": "d2",
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Sunny.", "reasoning_content": "The tool said so."},
        }
    ],
}
CLAUDE_THINKING_AND_SERVER_TOOLS: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-0",
    "content": [
        {"type": "thinking", "thinking": "Search, then call the tool.", "signature": "EqQBCkgIARABGAIiQ=="},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "paris"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01",
            "content": [
                {"type": "web_search_result", "url": "https://example.org", "title": "P", "encrypted_content": "e"}
            ],
        },
        {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 10, "output_tokens": 50},
}
CLAUDE_ANSWER: dict[str, Any] = {
    "id": "msg_02",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-0",
    "content": [{"type": "text", "text": "Sunny, 21 °C."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 20, "output_tokens": 5},
}
RESPONSES_BUILTIN: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-5-nano",
    "output": [
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "paris"},
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Sunny in Paris.", "annotations": []}],
        },
    ],
    "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
}


def provider_turns() -> list[ProviderTurn]:
    return [
        _recorded("openai-chat", ["b_single_tool_call_roundtrip"], _openai("gpt-4.1-mini"), "Weather in Berlin?"),
        _recorded(
            "ollama",
            ["openai_compat_c_parallel_tool_calls_roundtrip"],
            _openai("qwen3", "http://localhost:11434/v1"),
            "Weather in Berlin, and the best language?",
        ),
        _written(
            "deepseek reasoning_content", _openai("deepseek-reasoner"), [DEEPSEEK_CALL, DEEPSEEK_ANSWER], "Weather?"
        ),
        _recorded(
            "openai-responses", ["b_single_function_call_with_encrypted_reasoning"], _responses, "Weather in Berlin?"
        ),
        _written("responses built-in items", _responses, [RESPONSES_BUILTIN], "Weather in Paris?"),
        _recorded("anthropic", ["b_single_tool_use_roundtrip"], _anthropic, "Weather?"),
        _recorded("anthropic", ["c_parallel_tool_use_roundtrip"], _anthropic, "Weather in two cities?"),
        _written(
            "anthropic thinking and server tools",
            _anthropic,
            [CLAUDE_THINKING_AND_SERVER_TOOLS, CLAUDE_ANSWER],
            "Weather?",
        ),
        _recorded("ollama", ["native_b_tool_call", "native_b_tool_result_request"], _ollama, "Weather in Toronto?"),
        _recorded("gemini", ["c_parallel_function_calls_roundtrip"], _gemini, "Secrets of mellon and radiance?"),
        _recorded("gemini", ["h_thinking_thought_parts"], _gemini, "Primes with 79?", indices=[0]),
    ]
