"""``BedrockChatModel`` end to end over recorded traffic, in the four modes: the request goes to the
model's path, signed with SigV4, with the recorded body; the recorded reply comes back as ours; a
tool round runs through the real ``ToolCallingAdvisor`` and sends back the recorded second request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient, Prompt
from chatclient.errors import BadRequestError, ConfigurationError
from chatclient.options import ChatOptions
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import tool
from providers import create
from providers.bedrock import BedrockChatModel, BedrockProvider

from .fixtures import Replay

pytest.importorskip("botocore")

KEYS: dict[str, Any] = {"region": "us-east-1", "aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "s"}


def _model(replay: Replay, model: str = "us.amazon.nova-micro-v1:0", **options: Any) -> BedrockChatModel:
    transport = replay.transport()
    return BedrockChatModel(
        model,
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **KEYS,
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_exchange_in_every_mode(mode: str) -> None:
    name = "d_stream_text" if "stream" in mode else "a_plain_text"
    replay = Replay("bedrock", name)
    model = _model(replay)
    recorded = replay.recorded_request(0)
    system, question = recorded["body"]["system"][0]["text"], recorded["body"]["messages"][0]["content"][0]["text"]
    temperature = recorded["body"]["inferenceConfig"].get("temperature")
    spec = ChatClient.create(model).prompt().system(system).user(question).options(ChatOptions(temperature=temperature))
    response, _ = run_spec(mode, spec)
    (sent,) = replay.sent
    assert sent.url.raw_path.decode() == recorded["path"]
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    body = json.loads(sent.content)
    assert body == {k: v for k, v in recorded["body"].items() if v != {}}
    reply = response.chat_response
    assert reply is not None
    text = reply.generations[0].output.text
    assert text and ("Paris" in text if "stream" in mode else text.startswith("Hello!"))
    usage = reply.metadata.usage
    assert usage is not None and usage.completion_tokens > 0


@tool
def get_capital(country: str) -> str:
    """Get the capital of a country."""
    return "Paris"


@tool
def get_temperature(city: str) -> str:
    """Get the temperature in a city."""
    return "30°C"


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_recorded_tool_round(mode: str) -> None:
    replay = Replay("bedrock", "d_stream_tool_use_roundtrip")
    model = _model(replay)
    spec = (
        ChatClient.builder(model)
        .default_tools(get_capital, get_temperature)
        .build()
        .prompt()
        .system("You are a helpful chatbot.")
        .user("What is the temperature of the capital of France?")
        .options(ChatOptions(top_p=0.5))
    )
    reply = run_spec(mode, spec)[0].chat_response
    assert reply is not None
    assert reply.generations[0].output.text == "The current temperature in Paris, the capital of France, is 30°C."
    assert len(replay.sent) == 2
    assert json.loads(replay.sent[1].content)["messages"] == replay.recorded_request(1)["body"]["messages"]


def test_an_error_reply_is_our_error() -> None:
    replay = Replay("bedrock", "f_error_400_invalid_model")
    with pytest.raises(BadRequestError, match="model identifier is invalid"):
        ChatClient.create(_model(replay, "us.does-not-exist-model-v1:0")).prompt("hello").call().content()
    assert replay.sent[0].url.raw_path.decode() == replay.recorded_request(0)["path"]


def test_the_registry_string() -> None:
    model = create("bedrock:us.amazon.nova-micro-v1:0", **KEYS)
    assert isinstance(model, BedrockChatModel)
    assert model.base_url == "https://bedrock-runtime.us-east-1.amazonaws.com"
    assert model.default_options.model == "us.amazon.nova-micro-v1:0"
    model.close()


def test_a_bedrock_api_key_is_a_bearer_token_and_nothing_is_signed() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(400, json={"message": "no"})

    model = BedrockChatModel(
        "m",
        region="eu-west-1",
        api_key="bedrock-key",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    with pytest.raises(BadRequestError):
        model.call(Prompt("hi"))
    assert seen[0].headers["authorization"] == "Bearer bedrock-key"
    assert "x-amz-date" not in seen[0].headers
    assert "bedrock-key" not in repr(model) and "bedrock-key" not in repr(seen[0].headers)


def test_no_region_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigurationError, match="region"):
        BedrockProvider()


def test_the_repr_shows_the_region_and_no_secret() -> None:
    model = BedrockChatModel(
        "m", region="eu-west-3", aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="topsecret"
    )
    assert "eu-west-3" in repr(model) and "topsecret" not in repr(model)
    asyncio.run(model.aclose())
