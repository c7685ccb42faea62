"""The official ``anthropic`` SDK as transport: same body, SDK auth and headers, our parsing and errors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest

from chatclient import ChatResponse, ConfigurationError, FinishReason, Prompt
from chatclient.errors import APIConnectionError, AuthenticationError, OverloadedError, StreamIncompleteError
from chatclient.events import ModelEvent
from providers.anthropic import AnthropicChatModel, AnthropicChatOptions
from tests.providers.fixtures import Replay, interactions
from tests.providers.model_events import assemble, deltas
from tests.providers.test_anthropic import prompt_from_recorded, recorded_deltas, semantics

anthropic = pytest.importorskip("anthropic")

SDK_KEY = "sk-ant-sdk-secret-key"


def sdk_model(replay: Replay, *, use_async: bool) -> AnthropicChatModel:
    transport = replay.transport()
    client: Any
    if use_async:
        client = anthropic.AsyncAnthropic(
            api_key=SDK_KEY, max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
        )
    else:
        client = anthropic.Anthropic(api_key=SDK_KEY, max_retries=0, http_client=httpx2.Client(transport=transport))
    return AnthropicChatModel(client=client)


def prompt_of(replay: Replay) -> Prompt:
    return prompt_from_recorded(replay.recorded_request(0)["body"])


def run(model: AnthropicChatModel, prompt: Prompt, *, stream: bool, use_async: bool) -> ChatResponse:
    return run_events(model, prompt, stream=stream, use_async=use_async)[0]


def run_events(
    model: AnthropicChatModel, prompt: Prompt, *, stream: bool, use_async: bool
) -> tuple[ChatResponse, list[ModelEvent]]:
    """The reply, and for a stream the events it was assembled from."""
    events: list[ModelEvent]
    if not stream:
        return (asyncio.run(model.acall(prompt)) if use_async else model.call(prompt)), []
    if use_async:

        async def collect() -> list[ModelEvent]:
            return [event async for event in model.astream(prompt)]

        events = asyncio.run(collect())
    else:
        events = list(model.stream(prompt))
    assert len(events) > 2
    return assemble(events), events


@pytest.mark.parametrize("use_async", [False, True], ids=["Anthropic", "AsyncAnthropic"])
@pytest.mark.parametrize(
    ("name", "stream"), [("a_plain_text", False), ("d_stream_text", True), ("c_parallel_tool_use_roundtrip", False)]
)
def test_sdk_transport_replays(name: str, stream: bool, use_async: bool) -> None:
    replay = Replay("anthropic", name)
    model = sdk_model(replay, use_async=use_async)
    response, events = run_events(model, prompt_of(replay), stream=stream, use_async=use_async)
    if stream:
        recorded = interactions("anthropic", name)[0]["response"]["sse"]
        assert deltas(events) == recorded_deltas(recorded), "the SDK transport streams the same events"
    if name == "c_parallel_tool_use_roundtrip":
        assert [c.id for c in response.tool_calls] == [
            "toolu_01BUvqBj8Yb34pNAbCJJY1oc",
            "toolu_01VPuQJ1LonDBYXrr8pqPkqQ",
        ]
    else:
        assert response.text == "4200 + 42 = 4242"
    assert response.result is not None and response.result.finish_reason in (FinishReason.STOP, FinishReason.TOOL_CALLS)
    assert str(response.metadata.extra["request_id"]).startswith("req_")
    sent = replay.sent[0]
    assert sent.url.path == "/v1/messages"
    # The SDK's own auth applies (2.x sends a bearer token, 0.x sent x-api-key) ...
    assert SDK_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    # ... but the API version is the one our mapping speaks, not the SDK's newer default.
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert semantics(replay.sent_json(0)) == semantics(replay.recorded_request(0)["body"])


def test_sync_sdk_client_serves_async_calls_in_a_thread() -> None:
    replay = Replay("anthropic", "d_stream_text")
    model = sdk_model(replay, use_async=False)
    assert run(model, prompt_of(replay), stream=True, use_async=True).text == "4200 + 42 = 4242"
    replay = Replay("anthropic", "a_plain_text")
    model = sdk_model(replay, use_async=False)
    assert run(model, prompt_of(replay), stream=False, use_async=True).text == "4200 + 42 = 4242"


def test_async_sdk_client_refuses_sync_calls() -> None:
    model = sdk_model(Replay("anthropic", "a_plain_text"), use_async=True)
    with pytest.raises(ConfigurationError, match="AsyncAnthropic"):
        model.call(prompt_of(Replay("anthropic", "a_plain_text")))


@pytest.mark.parametrize("use_async", [False, True], ids=["Anthropic", "AsyncAnthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize(
    ("name", "error", "request_id"),
    [
        ("f_error_401_invalid_api_key", AuthenticationError, "req_011CWdMEehrhsdujMyQ9pChP"),
        ("f_error_529_overloaded", OverloadedError, "<REQUEST_ID>"),
    ],
)
def test_sdk_errors_map_into_our_tree(
    name: str, error: type[Exception], request_id: str, stream: bool, use_async: bool
) -> None:
    replay = Replay("anthropic", name)
    with pytest.raises(error) as raised:
        run(sdk_model(replay, use_async=use_async), prompt_of(replay), stream=stream, use_async=use_async)
    assert getattr(raised.value, "request_id", None) == request_id
    assert not isinstance(raised.value, anthropic.AnthropicError)
    assert SDK_KEY not in str(raised.value)
    assert len(replay.sent) == 1


@pytest.mark.parametrize("use_async", [False, True], ids=["Anthropic", "AsyncAnthropic"])
def test_sdk_stream_cut_before_message_stop_raises(use_async: bool) -> None:
    cut = interactions("anthropic", "d_stream_text")[0]["response"]["sse"].split("event: message_stop")[0]

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=cut.encode())

    transport = httpx2.MockTransport(handler)
    client: Any
    if use_async:
        client = anthropic.AsyncAnthropic(
            api_key=SDK_KEY, max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
        )
    else:
        client = anthropic.Anthropic(api_key=SDK_KEY, max_retries=0, http_client=httpx2.Client(transport=transport))
    with pytest.raises(StreamIncompleteError):
        run(AnthropicChatModel("claude-x", client=client), Prompt("hi"), stream=True, use_async=use_async)


def test_sdk_connection_failure_and_option_headers() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    client = anthropic.Anthropic(
        api_key=SDK_KEY, max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(refuse))
    )
    model = AnthropicChatModel("claude-x", client=client)
    with pytest.raises(APIConnectionError):
        model.call(Prompt("hi"))

    replay = Replay("anthropic", "a_plain_text")
    client = anthropic.Anthropic(api_key=SDK_KEY, http_client=httpx2.Client(transport=replay.transport()))
    options = AnthropicChatOptions(anthropic_beta=("output-128k-2025-02-19",), anthropic_version="2023-06-01")
    AnthropicChatModel("claude-x", client=client, options=options).call(Prompt("hi"))
    assert replay.sent[0].headers["anthropic-beta"] == "output-128k-2025-02-19"
    assert "AnthropicChatModel(model='claude-x'" in repr(AnthropicChatModel("claude-x", client=client))
