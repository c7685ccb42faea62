"""The Converse request body, held to the bodies recorded with the real API (pydantic-ai's cassettes):
a plain prompt, and the second request of a tool round, built from the reply our stream parser
assembled from the first (the reply's call goes back under its own id, its result after it)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pydantic import JsonValue

from chatclient.errors import ConfigurationError
from chatclient.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.tools import resolve_tools, tool
from providers.bedrock._eventstream import EventStreamDecoder
from providers.bedrock._mapping import PROVIDER, REASONING_METADATA_KEY
from providers.bedrock._request import build_request
from providers.bedrock._stream_parser import StreamParser

from .fixtures import interactions, recorded_eventstream
from .model_events import assemble

OPTIONS = ChatOptions(model="us.amazon.nova-micro-v1:0")


@tool
def get_temperature(city: str) -> str:
    """Get the temperature in a city."""
    return "30°C"


WITH_TOOLS = ToolCallingChatOptions(model=OPTIONS.model, tool_callbacks=tuple(resolve_tools([get_temperature])))
"""Tool blocks go as blocks only beside a tool list (without one Bedrock refuses them)."""


def _recorded(name: str, index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = interactions("bedrock", name)[index]["request"]["body"]
    return body


def test_a_plain_prompt_is_the_recorded_body() -> None:
    prompt = Prompt([SystemMessage("You are a helpful chatbot."), UserMessage("What is the capital of France?")])
    body = build_request(prompt, OPTIONS.model_copy(update={"temperature": 0.0}), stream=True)
    assert body == _recorded("d_stream_text")


def test_the_second_request_of_a_tool_round_is_the_recorded_one() -> None:
    decoder, parser = EventStreamDecoder(PROVIDER), StreamParser()
    raw = recorded_eventstream(interactions("bedrock", "d_stream_tool_use_roundtrip")[0])
    reply = assemble([event for message in decoder.feed(raw) for event in parser.feed(message)])
    assistant = reply.generations[0].output
    (call,) = assistant.tool_calls
    question = "What is the temperature of the capital of France?"
    prompt = Prompt(
        [
            SystemMessage("You are a helpful chatbot."),
            UserMessage(question),
            assistant,
            ToolResponseMessage([ToolResponse(id=call.id, name=call.name, response_data="30°C")]),
        ]
    )
    body = build_request(prompt, WITH_TOOLS, stream=True)
    assert body["messages"] == _recorded("d_stream_tool_use_roundtrip", 1)["messages"]


def test_reasoning_goes_back_first_as_it_came() -> None:
    block: JsonValue = {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "c2ln"}}}
    assistant = AssistantMessage(
        "Answer.",
        tool_calls=(ToolCall(id="t#2", name="f", arguments='{"a": 1}', wire_id="t"),),
        metadata={REASONING_METADATA_KEY: [block]},
    )
    results = ToolResponseMessage([ToolResponse(id="t#2", name="f", response_data="boom", is_error=True)])
    body = build_request(Prompt([UserMessage("Q"), assistant, results, UserMessage("And?")]), WITH_TOOLS, stream=False)
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Q"}]},
        {
            "role": "assistant",
            "content": [block, {"text": "Answer."}, {"toolUse": {"toolUseId": "t", "name": "f", "input": {"a": 1}}}],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t", "content": [{"text": "boom"}], "status": "error"}},
                {"text": "And?"},
            ],
        },
    ]


def test_images_and_documents_go_as_bytes() -> None:
    png, pdf = base64.b64encode(b"\x89PNG").decode(), base64.b64encode(b"%PDF-1.4").decode()
    message = UserMessage(
        "Describe both.",
        media=[
            ImagePart(data=png, media_type="image/png"),
            FilePart(data=pdf, media_type="application/pdf", filename="Q3 report (final).pdf"),
        ],
    )
    (sent,) = build_request(Prompt([message]), OPTIONS, stream=False)["messages"]
    assert sent["content"] == [
        {"image": {"format": "png", "source": {"bytes": png}}},
        {"document": {"format": "pdf", "name": "Q3 report (final)", "source": {"bytes": pdf}}},
        {"text": "Describe both."},
    ]


@pytest.mark.parametrize(
    "part",
    [ImagePart(url="https://example.com/a.png"), FilePart(data="AAAA", media_type="application/zip")],
    ids=["an image by URL", "a zip file"],
)
def test_media_it_cannot_take_is_refused_before_sending(part: ImagePart | FilePart) -> None:
    with pytest.raises(ConfigurationError, match="Bedrock cannot take"):
        build_request(Prompt([UserMessage("Look.", media=[part])]), OPTIONS, stream=False)


def test_the_options_are_the_inference_config() -> None:
    options = ChatOptions(model="m", max_tokens=100, temperature=0.2, top_p=0.9, top_k=40, stop_sequences=("END",))
    body = build_request(Prompt("Hi"), options, stream=False)
    assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]}
    assert body["additionalModelRequestFields"] == {"top_k": 40}


def test_no_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="No Bedrock model"):
        build_request(Prompt("Hi"), ChatOptions(), stream=False)


def test_an_output_schema_is_native_structured_output() -> None:
    """As recorded by pydantic-ai against the real API (``outputConfig.textFormat``, the schema as a string)."""
    schema: dict[str, JsonValue] = {
        "title": "City Location",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    body = build_request(Prompt("Where?"), ChatOptions(model="m", output_schema=schema), stream=False)
    structure = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert body["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert structure["name"] == "City_Location"
    assert json.loads(structure["schema"]) == schema


@pytest.mark.parametrize(
    ("model", "takes_status"),
    [
        ("us.amazon.nova-micro-v1:0", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("eu.anthropic.claude-3-5-haiku-20241022-v1:0", True),
        ("meta.llama3-1-70b-instruct-v1:0", False),
        ("mistral.mistral-large-2407-v1:0", False),
    ],
)
def test_a_results_status_goes_only_to_the_models_documented_to_take_it(model: str, takes_status: bool) -> None:
    """Bedrock documents ``toolResult.status`` for Claude and Nova only; another family gets the
    result without it (its text still says what happened)."""
    call = ToolCall(id="t", name="get_temperature", arguments='{"city": "Paris"}')
    results = ToolResponseMessage([ToolResponse(id="t", name="get_temperature", response_data="boom", is_error=True)])
    prompt = Prompt([UserMessage("Q"), AssistantMessage(None, tool_calls=(call,)), results])
    body = build_request(prompt, WITH_TOOLS.model_copy(update={"model": model}), stream=False)
    (result,) = [block["toolResult"] for block in body["messages"][-1]["content"]]
    assert ("status" in result) is takes_status
    assert result["content"] == [{"text": "boom"}]
