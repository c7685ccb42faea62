"""A history with tool blocks and no tool list: Bedrock rejects a request whose messages hold
``toolUse``/``toolResult`` blocks unless it also sends ``toolConfig`` ("The toolConfig field must be
defined when using toolUse and toolResult content blocks."). The fake Bedrock here enforces that rule;
every request that offers no tools must pass it, in the four modes: ``tool_choice="none"``, a
replayed conversation, and the loop's last round after its limit, when the tools are withheld."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from advisors import ToolCallingAdvisor
from chatclient import ChatClient
from chatclient.messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage, UserMessage
from chatclient.options import ToolCallingChatOptions
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallingManager, tool
from providers.bedrock import BedrockChatModel
from providers.bedrock._eventstream import encode_event

pytest.importorskip("botocore")

RULE = "The toolConfig field must be defined when using toolUse and toolResult content blocks."
USAGE = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}


@tool
def get_weather(city: str) -> str:
    """Get the current weather of a city."""
    return f"Sunny in {city}"


def _has_tool_blocks(body: dict[str, Any]) -> bool:
    return any("toolUse" in b or "toolResult" in b for m in body["messages"] for b in m["content"])


def _frame(event: str, data: dict[str, Any]) -> bytes:
    return encode_event(event, json.dumps(data).encode())


def _reply(content: list[dict[str, Any]], stop: str, stream: bool) -> httpx2.Response:
    if not stream:
        body = {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop, "usage": USAGE}
        return httpx2.Response(200, json=body)
    frames = [_frame("messageStart", {"role": "assistant"})]
    for index, block in enumerate(content):
        if "text" in block:
            frames.append(_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": block["text"]}}))
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            frames.append(_frame("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            delta = {"toolUse": {"input": json.dumps(use["input"])}}
            frames.append(_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        frames.append(_frame("contentBlockStop", {"contentBlockIndex": index}))
    frames.append(_frame("messageStop", {"stopReason": stop}))
    frames.append(_frame("metadata", {"usage": USAGE, "metrics": {"latencyMs": 1}}))
    return httpx2.Response(
        200, headers={"content-type": "application/vnd.amazon.eventstream"}, content=b"".join(frames)
    )


class FakeBedrock:
    """Answers with a call of ``get_weather`` while tools are offered, else with text; refuses, as
    Bedrock does, tool blocks sent without ``toolConfig``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if _has_tool_blocks(body) and "toolConfig" not in body:
            return httpx2.Response(400, headers={"x-amzn-errortype": "ValidationException"}, json={"message": RULE})
        stream = request.url.path.endswith("/converse-stream")
        if "toolConfig" in body:
            use = {"toolUseId": f"tooluse_{len(self.bodies)}", "name": "get_weather", "input": {"city": "Paris"}}
            return _reply([{"toolUse": use}], "tool_use", stream)
        return _reply([{"text": "It is sunny in Paris."}], "end_turn", stream)

    def model(self) -> BedrockChatModel:
        transport = httpx2.MockTransport(self)
        return BedrockChatModel(
            "us.amazon.nova-micro-v1:0", region="us-east-1", aws_access_key_id="AKIDEXAMPLE",
            aws_secret_access_key="s", http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
        )  # fmt: skip


HISTORY: list[Message] = [
    UserMessage("Weather in Paris?"),
    AssistantMessage(
        "Let me look.", tool_calls=(ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}', wire_id="t1"),)
    ),
    ToolResponseMessage([ToolResponse(id="c1", name="get_weather", response_data="Sunny in Paris")]),
]


def _answer(mode: str, spec: Any) -> str | None:
    reply = run_spec(mode, spec)[0].chat_response
    assert reply is not None
    return reply.generations[0].output.text


def _assert_history_as_text(body: dict[str, Any]) -> None:
    assert "toolConfig" not in body
    assert not _has_tool_blocks(body)
    texts = [b["text"] for m in body["messages"] for b in m["content"] if "text" in b]
    assert '[called tool get_weather with {"city":"Paris"}]' in texts
    assert "[result of tool get_weather: Sunny in Paris]" in texts


@pytest.mark.parametrize("mode", MODES)
def test_a_replayed_history_without_tools_is_accepted(mode: str) -> None:
    fake = FakeBedrock()
    spec = ChatClient.create(fake.model()).prompt().messages(*HISTORY).user("And tomorrow?")
    assert _answer(mode, spec) == "It is sunny in Paris."
    (body,) = fake.bodies
    _assert_history_as_text(body)
    assert body["messages"][-1]["content"][-1] == {"text": "And tomorrow?"}


@pytest.mark.parametrize("mode", MODES)
def test_tool_choice_none_sends_no_tools_and_the_history_as_text(mode: str) -> None:
    fake = FakeBedrock()
    client = ChatClient.builder(fake.model()).default_tools(get_weather).build()
    spec = client.prompt().messages(*HISTORY).options(ToolCallingChatOptions(tool_choice="none"))
    assert _answer(mode, spec) == "It is sunny in Paris."
    (body,) = fake.bodies
    _assert_history_as_text(body)


@pytest.mark.parametrize("mode", MODES)
def test_the_last_round_after_the_limit_is_accepted(mode: str) -> None:
    fake = FakeBedrock()
    manager = ToolCallingManager.builder().max_total_tool_calls(1).build()
    client = (
        ChatClient.builder(fake.model())
        .default_tools(get_weather)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .build()
    )
    assert _answer(mode, client.prompt("Weather in Paris?")) == "It is sunny in Paris."
    assert "toolConfig" in fake.bodies[0]
    last = fake.bodies[-1]
    assert "toolConfig" not in last and not _has_tool_blocks(last)


@pytest.mark.parametrize("mode", MODES)
def test_with_tools_offered_the_blocks_stay_blocks(mode: str) -> None:
    fake = FakeBedrock()
    manager = ToolCallingManager.builder().max_total_tool_calls(1).build()
    client = (
        ChatClient.builder(fake.model())
        .default_tools(get_weather)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .build()
    )
    assert _answer(mode, client.prompt().messages(*HISTORY)) == "It is sunny in Paris."
    first = fake.bodies[0]
    assert "toolConfig" in first and _has_tool_blocks(first)
    result = {"toolResult": {"toolUseId": "t1", "content": [{"text": "Sunny in Paris"}], "status": "success"}}
    assert result in first["messages"][-1]["content"]
