"""OllamaChatModel against the recorded native ``/api/chat`` traffic, plus retries and secrets.

Every ``ollama/native_*`` fixture is replayed through the model on an ``httpx2.MockTransport``: the
request we send must mean what the recorded one meant, and the recorded reply must map to the
right response or error. (The ``openai_compat_*`` files belong to ``providers.openai``.)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Annotated, Any

import httpx2
import pytest
from pydantic import Field

from chatclient import (
    AssistantMessage,
    ChatResponse,
    FinishReason,
    Prompt,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    tool,
)
from chatclient.errors import (
    APIConnectionError,
    AuthenticationError,
    MalformedResponseError,
    NotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamIncompleteError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.tools.resolve import resolve_tools
from providers._retry import RetryPolicy
from providers._transport import ProviderHttp
from providers.ollama import OllamaChatModel, OllamaChatOptions
from tests.providers.fixtures import Replay, fixture_files, interactions
from tests.providers.model_events import Delta, assemble, chunks, deltas, texts

NATIVE = [name for name in fixture_files("ollama") if name.startswith("native_")]
FAST = RetryPolicy(initial_backoff=0, max_backoff=0)


def model_on(handler: Callable[[httpx2.Request], httpx2.Response], model: str = "m", **kwargs: Any) -> OllamaChatModel:
    transport = httpx2.MockTransport(handler)
    kwargs.setdefault("retry", FAST)
    return OllamaChatModel(
        model,
        base_url="http://127.0.0.1:11434",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **kwargs,
    )


def run(model: OllamaChatModel, prompt: Prompt, mode: str) -> tuple[ChatResponse, list[ModelEvent]]:
    """The reply in one of the four modes, and a stream's events; streams are assembled as the tool
    loop does."""
    if mode == "call":
        return model.call(prompt), []
    if mode == "acall":
        return asyncio.run(model.acall(prompt)), []
    if mode == "stream":
        events = list(model.stream(prompt))
    else:

        async def collect() -> list[ModelEvent]:
            return [event async for event in model.astream(prompt)]

        events = asyncio.run(collect())
    return assemble(events), events


def wire_deltas(ndjson: str) -> list[Delta]:
    """The delta events a recorded NDJSON stream says: per line its thinking, its text, then each
    (whole) tool call as a start and one arguments delta."""
    expected: list[Delta] = []
    calls = 0
    for line in ndjson.splitlines():
        if not line.strip():
            continue
        message = json.loads(line).get("message") or {}
        if message.get("thinking"):
            expected.append(ReasoningDelta(message["thinking"]))
        if message.get("content"):
            expected.append(TextDelta(message["content"]))
        for call in message.get("tool_calls") or ():
            call_id = call.get("id") or f"call_{calls}"
            calls += 1
            expected.append(ToolCallStarted(call_id, call["function"]["name"]))
            expected.append(ToolCallDelta(call_id, json.dumps(call["function"]["arguments"], separators=(",", ":"))))
    return expected


def check_common_request(replay: Replay, index: int = 0, *, stream: bool) -> dict[str, Any]:
    """Path, model, stream flag, options and format as recorded; returns the body we sent."""
    sent: dict[str, Any] = replay.sent_json(index)
    recorded = replay.recorded_request(index)
    assert replay.sent[index].method == recorded["method"]
    assert replay.sent[index].url.path == recorded["path"]
    body = recorded["body"]
    assert sent["model"] == body["model"]
    # A request without "stream" streams (the server's default): we always say it explicitly.
    assert sent["stream"] is body.get("stream", True) is stream
    assert sent.get("options", {}) == body.get("options", {})
    assert sent.get("format", "") == body.get("format", "")
    # A recorded "tools: []" means no tools: we leave the key out.
    assert [t["function"]["name"] for t in sent.get("tools", [])] == [
        t["function"]["name"] for t in body.get("tools") or []
    ]
    return sent


def carries(ours: Any, recorded: Any) -> bool:
    """``ours`` holds everything ``recorded`` holds (objects may have more keys, lists match item by item)."""
    if isinstance(recorded, dict):
        return isinstance(ours, dict) and all(k in ours and carries(ours[k], v) for k, v in recorded.items())
    if isinstance(recorded, list):
        return isinstance(ours, list) and len(ours) == len(recorded) and all(map(carries, ours, recorded))
    return bool(ours == recorded)


def plain_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": m["role"], "content": m["content"]} for m in body["messages"]]


# ------------------------------------------------------------------------------- per fixture


def case_native_a_plain_text(replay: Replay, mode: str) -> None:
    model = model_on(replay, "qwen3.6:latest")
    prompt = Prompt("Why is the sky blue? Answer in one sentence.", OllamaChatOptions(temperature=0, seed=42))
    response, _ = run(model, prompt, mode)
    sent = check_common_request(replay, stream=False)
    assert plain_messages(sent) == plain_messages(replay.recorded_request(0)["body"])
    assert response.text is not None and response.text.startswith("The sky appears blue because")
    assert response.tool_calls == ()
    assert response.result is not None
    assert response.result.finish_reason is FinishReason.STOP
    assert response.result.metadata.extra == {"raw_finish_reason": "stop"}
    thinking = response.result.output.metadata["thinking"]
    assert isinstance(thinking, str) and thinking.startswith("Here's a thinking process")
    assert "thinking process" not in response.text, "thinking is metadata, not answer text"
    assert response.usage == Usage(prompt_tokens=21, completion_tokens=369)
    assert response.metadata.model == "qwen3.6:latest"
    assert response.metadata.id is None, "Ollama replies carry no id"
    assert response.metadata.extra["total_duration"] == 8313421042
    assert response.metadata.extra["created_at"] == "2026-08-07T06:08:07.590207Z"


@tool(description="Get the current weather in a city.")
def get_current_weather(city: Annotated[str, Field(description="The city name.")]) -> str:
    return f"Sunny in {city}"


def case_native_b_tool_call(replay: Replay, mode: str) -> None:
    model = model_on(replay, "qwen3.6:latest")
    options = OllamaChatOptions(temperature=0, seed=42, tool_callbacks=resolve_tools([get_current_weather]))
    prompt = Prompt("What is the weather in Paris? Use the get_current_weather tool.", options)
    response, _ = run(model, prompt, mode)
    sent = check_common_request(replay, stream=False)
    recorded = replay.recorded_request(0)["body"]
    assert plain_messages(sent) == plain_messages(recorded)
    assert sent["tools"][0]["type"] == "function"
    sent_fn, recorded_fn = sent["tools"][0]["function"], recorded["tools"][0]["function"]
    assert sent_fn["description"] == recorded_fn["description"]
    for key in ("type", "required", "properties"):
        assert sent_fn["parameters"][key] == recorded_fn["parameters"][key]
    assert response.tool_calls == (
        ToolCall(id="call_gsiiy8py", name="get_current_weather", arguments='{"city":"Paris"}'),
    )
    assert response.result is not None
    assert response.result.finish_reason is FinishReason.TOOL_CALLS, "done_reason 'stop' after tool calls"
    assert response.result.metadata.extra["raw_finish_reason"] == "stop"
    assert not response.text, "the empty content of a tool-call reply is no text"
    assert "thinking" in response.result.output.metadata
    assert response.usage == Usage(prompt_tokens=292, completion_tokens=143)


def case_native_b_tool_result_request(replay: Replay, mode: str) -> None:
    model = model_on(replay, "llama3.1")
    call = ToolCall(id="call_0", name="get_current_weather", arguments='{"location": "San Francisco"}')
    result = "The weather in San Francisco is 70 degrees and sunny."
    prompt = Prompt(
        [
            AssistantMessage("", tool_calls=[call]),
            ToolResponseMessage([ToolResponse(id="call_0", name="get_current_weather", response_data=result)]),
        ]
    )
    response, _ = run(model, prompt, mode)
    sent = check_common_request(replay, stream=False)
    recorded = replay.recorded_request(0)["body"]["messages"]
    assert len(sent["messages"]) == len(recorded) == 2
    for ours, theirs in zip(sent["messages"], recorded, strict=True):
        # Everything recorded is sent the same; we add tool_name / tool_call_id (servers since 2025
        # use them to match results to calls) and the call id, which older servers ignore.
        assert carries(ours, theirs), (ours, theirs)
    assert sent["messages"][0]["tool_calls"][0]["id"] == "call_0"
    assert sent["messages"][1]["tool_name"] == "get_current_weather"
    assert sent["messages"][1]["tool_call_id"] == "call_0"
    assert response.text is not None and response.text.startswith("This is a simple example")
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.usage == Usage(prompt_tokens=44, completion_tokens=113)


def case_native_d_stream_ndjson(replay: Replay, mode: str) -> None:
    model = model_on(replay, "gemma3:1b")
    prompt = Prompt("Count from 1 to 5", OllamaChatOptions(max_tokens=50, temperature=0))
    response, events = run(model, prompt, mode)
    sent = check_common_request(replay, stream=True)
    assert plain_messages(sent) == plain_messages(replay.recorded_request(0)["body"])
    assert texts(events)[:3] == ["Okay", ",", " here"], "text deltas pass through as they arrive"
    assert len(texts(events)) == 21
    if events:
        assert deltas(events) == wire_deltas(interactions(replay.provider, replay.name)[0]["response"]["ndjson"])
        opening, closing = chunks(events)
        assert events[0] is opening and opening.metadata.model == "gemma3:1b" and opening.metadata.usage is None
        assert events[-1] is closing and closing.usage == response.usage, "usage comes with the done line only"
    assert response.text == "Okay, here we go!\n\n1, 2, 3, 4, 5\n"
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.usage == Usage(prompt_tokens=16, completion_tokens=22)
    assert response.metadata.model == "gemma3:1b"
    assert response.metadata.extra["eval_duration"] == 105611917


def case_native_e_format_json(replay: Replay, mode: str) -> None:
    model = model_on(replay, "gemma3:1b")
    prompt = Prompt(
        "How many feet are in a nautical mile? Respond with JSON containing the answer.",
        OllamaChatOptions(temperature=0, format="json"),
    )
    response, events = run(model, prompt, mode)
    sent = check_common_request(replay, stream=True)
    assert sent["format"] == "json"
    assert plain_messages(sent) == plain_messages(replay.recorded_request(0)["body"])
    if events:
        assert len(texts(events)) == 8
    assert response.text is not None and json.loads(response.text) == {"answer": "600"}
    assert response.usage == Usage(prompt_tokens=25, completion_tokens=9)


def case_native_f_error_404_model_not_found(replay: Replay, mode: str) -> None:
    model = model_on(replay, "nonexistent-model:latest")
    with pytest.raises(NotFoundError) as raised:
        run(model, Prompt("Why is the sky blue?"), mode)
    if "stream" in mode:  # the recording is a complete call; a stream asks for the same model
        assert replay.sent_json(0)["stream"] is True
        assert replay.sent_json(0)["model"] == replay.recorded_request(0)["body"]["model"]
    else:
        check_common_request(replay, stream=False)
    error = raised.value
    assert error.status == 404
    assert error.provider == "ollama"
    assert error.message == "model 'nonexistent-model:latest' not found"
    assert error.error_type is None and error.request_id is None and error.retry_after is None
    assert not error.retryable
    assert len(replay.sent) == 1, "a 404 is not retried"


CASES: dict[str, tuple[Callable[[Replay, str], None], tuple[str, ...]]] = {
    "native_a_plain_text": (case_native_a_plain_text, ("call", "acall")),
    "native_b_tool_call": (case_native_b_tool_call, ("call", "acall")),
    "native_b_tool_result_request": (case_native_b_tool_result_request, ("call", "acall")),
    "native_d_stream_ndjson": (case_native_d_stream_ndjson, ("stream", "astream")),
    # The recorded request left "stream" out, so the server streamed: replayed as a stream.
    "native_e_format_json": (case_native_e_format_json, ("stream", "astream")),
    "native_f_error_404_model_not_found": (
        case_native_f_error_404_model_not_found,
        ("call", "acall", "stream", "astream"),
    ),
}


def test_every_native_fixture_has_a_case() -> None:
    assert set(CASES) == set(NATIVE)


def _replay_params() -> list[tuple[str, str]]:
    """(fixture, mode) for every native file; a file without a case still yields one failing test."""
    return [(name, mode) for name in NATIVE for mode in (CASES[name][1] if name in CASES else ("call",))]


@pytest.mark.parametrize(("name", "mode"), _replay_params())
def test_replay_native_fixture(name: str, mode: str) -> None:
    assert name in CASES, f"new fixture {name}: add a case for it"
    CASES[name][0](Replay("ollama", name), mode)


def test_tool_call_fixture_through_the_tool_loop() -> None:
    """The recorded tool call runs the real tool, and the follow-up carries its result by name and id."""
    from chatclient import ChatClient

    replay = Replay("ollama", "native_b_tool_call")
    recorded = Replay("ollama", "native_b_tool_result_request")

    def handler(request: httpx2.Request) -> httpx2.Response:
        if not replay.sent:
            return replay(request)
        return recorded(request)

    chat = ChatClient.builder(model_on(handler, "qwen3.6:latest")).default_tools(get_current_weather).build()
    reply = chat.prompt("What is the weather in Paris?").call().chat_response()
    assert reply is not None and reply.text is not None and reply.text.startswith("This is a simple example")
    follow_up = recorded.sent_json(0)["messages"]
    assert follow_up[1]["tool_calls"] == [
        {"id": "call_gsiiy8py", "function": {"name": "get_current_weather", "arguments": {"city": "Paris"}}}
    ]
    assert follow_up[1]["thinking"].startswith("Thinking Process"), "thinking is echoed back"
    assert follow_up[2] == {
        "role": "tool",
        "content": "Sunny in Paris",
        "tool_name": "get_current_weather",
        "tool_call_id": "call_gsiiy8py",
    }


# ------------------------------------------------------------------------------- configuration


def test_base_url_from_ollama_host_and_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaChatModel("m").base_url == "http://localhost:11434"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    assert OllamaChatModel("m").base_url == "http://gpu-box:11500"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert OllamaChatModel("m").base_url == "http://localhost:11434"
    monkeypatch.setenv("OLLAMA_HOST", "https://ollama.example.org/")
    assert OllamaChatModel("m").base_url == "https://ollama.example.org"
    assert OllamaChatModel("m", base_url="http://other:1234/").base_url == "http://other:1234"


def test_model_argument_and_default_options() -> None:
    defaults = OllamaChatOptions(model="from-options", keep_alive="10m", temperature=0.5)
    model = OllamaChatModel("llama3.2", options=defaults)
    assert model.default_options.model == "llama3.2"
    assert model.default_options.keep_alive == "10m"
    assert OllamaChatModel(options=defaults).default_options.model == "from-options"


def test_prompt_options_merge_over_model_defaults() -> None:
    bodies: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(
            200, json={"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": True}
        )

    model = model_on(handler, "m", options=OllamaChatOptions(keep_alive="1h", num_ctx=8192, temperature=0.2))
    model.call(Prompt("hi", OllamaChatOptions(temperature=0.9, think=False)))
    assert bodies[0]["keep_alive"] == "1h"
    assert bodies[0]["think"] is False
    assert bodies[0]["options"] == {"temperature": 0.9, "num_ctx": 8192}
    assert bodies[0]["stream"] is False


def test_no_authorization_header_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    replay = Replay("ollama", "native_a_plain_text")
    model_on(replay, "qwen3.6:latest").call(Prompt("hi"))
    assert "authorization" not in replay.sent[0].headers


def test_api_key_is_sent_as_bearer_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "ollama-secret-key-123"
    monkeypatch.setenv("OLLAMA_API_KEY", secret)
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(401, json={"error": "unauthorized"})

    model = model_on(handler, "gpt-oss:120b")
    assert secret not in repr(model) and secret not in str(vars(model)) and secret not in repr(model._http)
    with pytest.raises(AuthenticationError) as raised:
        model.call(Prompt("hi"))
    assert sent[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in str(raised.value) and secret not in repr(raised.value)
    assert raised.value.message == "unauthorized"
    explicit = model_on(handler, "m", api_key="other-key")
    with pytest.raises(AuthenticationError):
        explicit.call(Prompt("hi"))
    assert sent[-1].headers["authorization"] == "Bearer other-key"


# ------------------------------------------------------------------------------- retries


class Sequenced:
    """Serves the given responses in order and counts requests."""

    def __init__(self, *responses: Callable[[], httpx2.Response]) -> None:
        self.responses = list(responses)
        self.requests = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        return self.responses[min(self.requests, len(self.responses)) - 1]()


def ok_body() -> httpx2.Response:
    return httpx2.Response(
        200,
        json={"model": "m", "message": {"role": "assistant", "content": "ok"}, "done": True, "done_reason": "stop"},
    )


def ok_stream() -> httpx2.Response:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "o"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "k"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
    ]
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return httpx2.Response(200, headers={"content-type": "application/x-ndjson"}, content=content)


@pytest.mark.parametrize("status", [429, 500, 503])
@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
def test_retryable_errors_are_retried_then_succeed(status: int, mode: str) -> None:
    good = ok_stream if "stream" in mode else ok_body
    handler = Sequenced(lambda: httpx2.Response(status, json={"error": "busy"}), good)
    response, _ = run(model_on(handler), Prompt("hi"), mode)
    assert response.text == "ok"
    assert handler.requests == 2


def test_retries_give_up_after_the_policy() -> None:
    handler = Sequenced(lambda: httpx2.Response(500, json={"error": "runner crashed"}))
    with pytest.raises(ServerError) as raised:
        model_on(handler, retry=RetryPolicy(max_retries=1, initial_backoff=0)).call(Prompt("hi"))
    assert handler.requests == 2
    assert raised.value.message == "runner crashed"


@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    waits: list[float] = []
    original = ProviderHttp._wait

    def spy(self: ProviderHttp, error: Any, attempt: int) -> float:
        waits.append(original(self, error, attempt))
        return 0.0

    monkeypatch.setattr(ProviderHttp, "_wait", spy)
    good = ok_stream if "stream" in mode else ok_body
    handler = Sequenced(lambda: httpx2.Response(429, headers={"retry-after": "3"}, json={"error": "slow down"}), good)
    response, _ = run(model_on(handler), Prompt("hi"), mode)
    assert response.text == "ok"
    assert waits == [3.0], "the wait is the provider's Retry-After, not the backoff"


def test_retry_after_beyond_the_cap_is_raised_at_once() -> None:
    handler = Sequenced(lambda: httpx2.Response(429, headers={"retry-after": "3600"}, json={"error": "quota"}))
    with pytest.raises(RateLimitError) as raised:
        model_on(handler).call(Prompt("hi"))
    assert raised.value.retry_after == 3600.0
    assert handler.requests == 1


def broken_stream_lines() -> Iterator[bytes]:
    yield b'{"model":"m","message":{"role":"assistant","content":"Hel"},"done":false}\n'
    raise httpx2.ReadError("connection reset")


async def abroken_stream_lines() -> AsyncIterator[bytes]:
    yield b'{"model":"m","message":{"role":"assistant","content":"Hel"},"done":false}\n'
    raise httpx2.ReadError("connection reset")


def test_stream_is_not_retried_after_its_first_chunk() -> None:
    handler = Sequenced(lambda: httpx2.Response(200, content=broken_stream_lines()), ok_stream)
    received: list[ModelEvent] = []
    with pytest.raises(APIConnectionError):
        for event in model_on(handler).stream(Prompt("hi")):
            received.append(event)
    assert texts(received) == ["Hel"]
    assert handler.requests == 1


def test_astream_is_not_retried_after_its_first_chunk() -> None:
    handler = Sequenced(lambda: httpx2.Response(200, content=abroken_stream_lines()), ok_stream)
    received: list[ModelEvent] = []

    async def consume() -> None:
        async for event in model_on(handler).astream(Prompt("hi")):
            received.append(event)

    with pytest.raises(APIConnectionError):
        asyncio.run(consume())
    assert texts(received) == ["Hel"]
    assert handler.requests == 1


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_error_line_inside_a_stream_is_raised(mode: str) -> None:
    lines = (
        b'{"model":"m","message":{"role":"assistant","content":"Hel"},"done":false}\n'
        b'{"error":"an error was encountered while running the model: unexpected EOF"}\n'
    )
    handler = Sequenced(lambda: httpx2.Response(200, headers={"content-type": "application/x-ndjson"}, content=lines))
    with pytest.raises(ProviderError) as raised:
        run(model_on(handler), Prompt("hi"), mode)
    assert isinstance(raised.value, ServerError)
    assert "unexpected EOF" in raised.value.message
    assert handler.requests == 1


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_malformed_line_and_truncated_stream(mode: str) -> None:
    bad = Sequenced(
        lambda: httpx2.Response(200, content=b'{"model":"m","message":{"content":"a"},"done":false}\n{oops\n')
    )
    with pytest.raises(MalformedResponseError):
        run(model_on(bad), Prompt("hi"), mode)
    cut = Sequenced(lambda: httpx2.Response(200, content=b'{"model":"m","message":{"content":"a"},"done":false}\n'))
    with pytest.raises(StreamIncompleteError, match="done"):
        run(model_on(cut), Prompt("hi"), mode)
    empty = Sequenced(lambda: httpx2.Response(200, headers={"content-type": "application/x-ndjson"}, content=b""))
    with pytest.raises(StreamIncompleteError):
        run(model_on(empty), Prompt("hi"), mode)
