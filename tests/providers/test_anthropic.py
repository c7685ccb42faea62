"""AnthropicChatModel against the recorded Messages API traffic: what we send and what we make of it.

Every file of ``provider-traffic/anthropic`` is replayed. The prompt of each interaction is rebuilt from
the recorded request (so the request we send can be compared with it), and the recorded reply must map
to the expected text, tool calls, usage, finish reason or error.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatResponse,
    FinishReason,
    Message,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.errors import (
    AuthenticationError,
    ContextLengthExceededError,
    OverloadedError,
    ProviderError,
    RateLimitError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.callback import ToolCallback
from chatclient.tools.resolve import resolve_tools
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel, AnthropicChatOptions
from tests.providers.fixtures import Replay, fixture_files, interactions
from tests.providers.model_events import Delta, assemble, chunks, deltas, texts

PROVIDER = "anthropic"
KEY = "sk-ant-test-0123456789-secret"

# ------------------------------------------------------------------------------------------- tools


@tool(description="Gets current weather for a location")
def weather(latitude: str, longitude: str) -> str:
    return f"Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h"


SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}


@tool(description="A tool that requires a password to retrieve a secret.")
def secret_retrieval_tool(password: str) -> str:
    return SECRETS[password]


@tool(description="Gets the best language to learn")
def best_language_to_learn() -> str:
    return "Python"


TOOLS: dict[str, ToolCallback] = {
    cb.name: cb for cb in resolve_tools([weather, secret_retrieval_tool, best_language_to_learn])
}

# ---------------------------------------------------------------------------------------- expected


@dataclass(frozen=True)
class Reply:
    text: str | None
    usage: tuple[int, int]
    finish: FinishReason
    raw_finish: str
    id: str
    model: str
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    exact_text: bool = True


@dataclass(frozen=True)
class Failure:
    error: type[ProviderError]
    status: int
    error_type: str
    request_id: str
    retryable: bool
    retry_after: float | None = None
    message_part: str = ""


SONNET4 = "claude-sonnet-4-20250514"
HAIKU45 = "claude-haiku-4-5-20251001"
MELLON = ("secret_retrieval_tool", {"password": "mellon"})
RADIANCE = ("secret_retrieval_tool", {"password": "radiance"})

EXPECTED: dict[str, list[Reply | Failure]] = {
    "a_plain_text": [
        Reply("4200 + 42 = 4242", (17, 15), FinishReason.STOP, "end_turn", "msg_01EXuhhFC9buDpjCcznFPSDs", SONNET4)
    ],
    "b_single_tool_use_roundtrip": [
        Reply(
            None,
            (633, 75),
            FinishReason.TOOL_CALLS,
            "tool_use",
            "msg_011CeCGmCbAyQmGiHPwNrvsc",
            HAIKU45,
            (("toolu_01Ay5KzhmQYMK53svGLaAxfc", "weather", {"latitude": "52.5200", "longitude": "13.4050"}),),
        ),
        Reply(
            "The weather in Berlin is currently:",
            (748, 55),
            FinishReason.STOP,
            "end_turn",
            "msg_011CeCGmJyeqtPVxNMNBTuXR",
            HAIKU45,
            exact_text=False,
        ),
    ],
    "c_parallel_tool_use_roundtrip": [
        Reply(
            "I'll retrieve the secrets for both passwords you provided.",
            (416, 109),
            FinishReason.TOOL_CALLS,
            "tool_use",
            "msg_018DaxGuCtuQ42XfuFiC1wxo",
            SONNET4,
            (("toolu_01BUvqBj8Yb34pNAbCJJY1oc", *MELLON), ("toolu_01VPuQJ1LonDBYXrr8pqPkqQ", *RADIANCE)),
        ),
        Reply(
            "Here are the secrets retrieved for each password:",
            (602, 39),
            FinishReason.STOP,
            "end_turn",
            "msg_01ScjDVcCDi4rT9aEjbEHqrJ",
            SONNET4,
            exact_text=False,
        ),
    ],
    "d_stream_text": [
        Reply("4200 + 42 = 4242", (17, 15), FinishReason.STOP, "end_turn", "msg_018bk6q16LtrDpGDm6TyXTgn", SONNET4)
    ],
    "d_stream_parallel_tool_use_input_json_delta": [
        Reply(
            "I'll retrieve the secrets for both passwords you provided.",
            (416, 109),
            FinishReason.TOOL_CALLS,
            "tool_use",
            "msg_013zKrzHmx2EAPhcF2gQKQ4k",
            SONNET4,
            (("toolu_015cUijgET79LXjgeYQerN2h", *MELLON), ("toolu_01XZTimPexA7h3EVKesnKt5T", *RADIANCE)),
        ),
        Reply(
            "Here are the secrets retrieved for each password:",
            (602, 52),
            FinishReason.STOP,
            "end_turn",
            "msg_017XFa1GH7bCU9DpZk93UPQ5",
            SONNET4,
            exact_text=False,
        ),
    ],
    "e_structured_output_json_schema": [
        Reply(
            '{"amount":12.34}',
            (222, 10),
            FinishReason.STOP,
            "end_turn",
            "msg_01GehnYTFBiQDSeSpRvDa1Mp",
            "claude-sonnet-4-5-20250929",
        )
    ],
    "e_structured_output_json_schema_stream": [
        Reply(
            '{"name": "Biscuit", "age": 4, "bio": "Biscuit is a golden retriever',
            (230, 94),
            FinishReason.STOP,
            "end_turn",
            "msg_01HGSyDK4y9Spcd6ySQumMNC",
            "claude-sonnet-4-5-20250929",
            exact_text=False,
        )
    ],
    "f_error_400_prompt_too_long": [
        Failure(
            ContextLengthExceededError,
            400,
            "invalid_request_error",
            "req_011CeCGmMJJGRCp7xgjqapmJ",
            False,
            message_part="prompt is too long",
        )
    ],
    "f_error_401_invalid_api_key": [
        Failure(
            AuthenticationError, 401, "authentication_error", "req_011CWdMEehrhsdujMyQ9pChP", False, None, "x-api-key"
        )
    ],
    "f_error_429_rate_limit": [
        Failure(RateLimitError, 429, "rate_limit_error", "req_011CXz7Eb8yA2uD5ksbePfx8", True, 41.0, "rate limit")
    ],
    "f_error_529_overloaded": [
        Failure(OverloadedError, 529, "overloaded_error", "<REQUEST_ID>", True, None, "Overloaded")
    ],
}


def test_every_recorded_file_is_covered() -> None:
    assert set(EXPECTED) == set(fixture_files(PROVIDER))
    for name, expected in EXPECTED.items():
        assert len(expected) == len(interactions(PROVIDER, name)), name


# ------------------------------------------------------------------ prompt from a recorded request


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block.get("type") == "text")


def prompt_from_recorded(body: dict[str, Any]) -> Prompt:
    """Our ``Prompt`` for a recorded request body: the conversation, tools and options it carries."""
    messages: list[Message] = []
    system = body.get("system")
    if system is not None:
        messages.extend(SystemMessage(b["text"]) for b in _blocks(system))
    names: dict[str, str] = {}
    for message in body["messages"]:
        blocks = _blocks(message["content"])
        if message["role"] == "assistant":
            text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
            calls = [
                ToolCall(id=b["id"], name=b["name"], arguments=json.dumps(b["input"]))
                for b in blocks
                if b["type"] == "tool_use"
            ]
            names.update((c.id, c.name) for c in calls)
            messages.append(AssistantMessage(text, tool_calls=calls))
            continue
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            messages.append(
                ToolResponseMessage(
                    [
                        ToolResponse(
                            id=b["tool_use_id"],
                            name=names[b["tool_use_id"]],
                            response_data=_result_text(b.get("content")),
                            is_error=bool(b.get("is_error")),
                        )
                        for b in results
                    ]
                )
            )
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        if texts:
            messages.append(UserMessage("".join(texts)))
    options: dict[str, Any] = {"model": body["model"], "max_tokens": body["max_tokens"]}
    if "temperature" in body:
        options["temperature"] = body["temperature"]
    if "tools" in body:
        options["tool_callbacks"] = tuple(TOOLS[t["name"]] for t in body["tools"])
        options["cache_tools"] = any("cache_control" in t for t in body["tools"])
    if isinstance(system, list):
        options["cache_system_prompt"] = any(b.get("cache_control") for b in system)
    if "output_config" in body:
        options["output_schema"] = body["output_config"]["format"]["schema"]
    return Prompt(messages, AnthropicChatOptions(**options))


# ------------------------------------------------------------------ request semantics


def _normal_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]}
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": _result_text(block.get("content")),
            "is_error": bool(block.get("is_error")),
        }
    raise AssertionError(f"unexpected block {block}")


def semantics(body: dict[str, Any]) -> dict[str, Any]:
    """The parts of a request body that carry meaning, in one normal form (no cache marks, no nulls)."""
    system = body.get("system")
    return {
        "model": body["model"],
        "max_tokens": body["max_tokens"],
        "temperature": body.get("temperature"),
        "stream": bool(body.get("stream")),
        "system": [b["text"] for b in _blocks(system)] if system is not None else [],
        "system_cached": isinstance(system, list) and any(b.get("cache_control") for b in system),
        "messages": [
            {"role": m["role"], "content": [_normal_block(b) for b in _blocks(m["content"])]} for m in body["messages"]
        ],
        "tools": [
            {
                "name": t["name"],
                "description": t["description"],
                "properties": sorted(t["input_schema"].get("properties", {})),
                "required": sorted(t["input_schema"].get("required", [])),
            }
            for t in body.get("tools", [])
        ],
        "tools_cached": any("cache_control" in t for t in body.get("tools", [])),
        "output_config": body.get("output_config"),
    }


def assert_sent_like_recorded(replay: Replay, index: int) -> None:
    sent = replay.sent[index]
    recorded = replay.recorded_request(index)
    assert sent.method == "POST"
    assert sent.url.path == "/v1/messages"
    # The structured-output file was recorded through the SDK's beta client (?beta=true); we use the
    # GA endpoint, which takes the same output_config (the _stream file was recorded there).
    assert recorded["path"].split("?")[0] == "/v1/messages"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["content-type"] == "application/json"
    assert semantics(replay.sent_json(index)) == semantics(recorded["body"])


# ------------------------------------------------------------------ response mapping


def assert_reply(response: ChatResponse, expected: Reply, request_id: str | None) -> None:
    if expected.text is None:
        assert not response.text
    elif expected.exact_text:
        assert response.text == expected.text
    else:
        assert response.text is not None and response.text.startswith(expected.text)
    calls = [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls]
    assert calls == [(i, n, a) for i, n, a in expected.calls]
    assert response.usage.prompt_tokens == expected.usage[0]
    assert response.usage.completion_tokens == expected.usage[1]
    assert response.usage.cache_read_tokens == 0 and response.usage.cache_write_tokens == 0
    assert response.result is not None
    assert response.result.finish_reason is expected.finish
    assert response.result.metadata.extra["raw_finish_reason"] == expected.raw_finish
    assert response.metadata.id == expected.id
    assert response.metadata.model == expected.model
    if request_id is not None:
        assert response.metadata.extra["request_id"] == request_id


def assert_failure(error: ProviderError, expected: Failure) -> None:
    assert type(error) is expected.error
    assert error.status == expected.status
    assert error.error_type == expected.error_type
    assert error.request_id == expected.request_id
    assert error.retryable is expected.retryable
    assert error.retry_after == expected.retry_after
    assert error.provider == "anthropic"
    assert expected.message_part in str(error)
    assert KEY not in str(error) and KEY not in repr(error)


def recorded_text_deltas(sse: str) -> list[str]:
    pieces = []
    for line in sse.splitlines():
        if line.startswith("data: "):
            data = json.loads(line[6:])
            if data.get("type") == "content_block_delta" and data["delta"]["type"] == "text_delta":
                pieces.append(data["delta"]["text"])
    return pieces


def recorded_deltas(sse: str) -> list[Delta]:
    """The delta events the recorded stream says, read off the wire: a tool_use block start is a call's
    start, each non-empty ``partial_json`` a delta of the call of that block index, thinking text is
    reasoning."""
    expected: list[Delta] = []
    calls: dict[int, str] = {}
    for line in sse.splitlines():
        if not line.startswith("data: "):
            continue
        data = json.loads(line[6:])
        if data["type"] == "content_block_start":
            block = data["content_block"]
            if block["type"] == "tool_use":
                calls[data["index"]] = block["id"]
                expected.append(ToolCallStarted(block["id"], block["name"]))
            elif block.get("text") or block.get("thinking"):
                kind = TextDelta if block["type"] == "text" else ReasoningDelta
                expected.append(kind(block.get("text") or block["thinking"]))
        elif data["type"] == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                expected.append(TextDelta(delta["text"]))
            elif delta["type"] == "thinking_delta":
                expected.append(ReasoningDelta(delta["thinking"]))
            elif delta["type"] == "input_json_delta" and delta["partial_json"]:
                expected.append(ToolCallDelta(calls[data["index"]], delta["partial_json"]))
    return expected


# ------------------------------------------------------------------ running a model


def make_model(replay: Replay, **kwargs: Any) -> AnthropicChatModel:
    transport = replay.transport()
    return AnthropicChatModel(
        api_key=KEY,
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=kwargs.pop("retry", RetryPolicy(max_retries=0)),
        **kwargs,
    )


def run_model(model: AnthropicChatModel, prompt: Prompt, *, stream: bool, use_async: bool) -> list[ModelEvent]:
    """The events of a streamed reply, or the one reply of a call."""
    if not stream:
        return [asyncio.run(model.acall(prompt)) if use_async else model.call(prompt)]
    if not use_async:
        return list(model.stream(prompt))

    async def collect() -> list[ModelEvent]:
        return [event async for event in model.astream(prompt)]

    return asyncio.run(collect())


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", fixture_files(PROVIDER))
def test_replay_each_interaction(name: str, use_async: bool) -> None:
    """Each recorded request, rebuilt as a Prompt, is sent the same way and its reply maps right."""
    for index, interaction in enumerate(interactions(PROVIDER, name)):
        recorded_body = interaction["request"]["body"]
        stream = bool(recorded_body.get("stream"))
        # Replay serves interaction len(sent): placeholders make it serve interaction `index`.
        skipped = Replay(PROVIDER, name)
        for _ in range(index):
            skipped.sent.append(httpx2.Request("POST", "https://skipped"))
        model = make_model(skipped)
        expected = EXPECTED[name][index]
        prompt = prompt_from_recorded(recorded_body)
        if isinstance(expected, Failure):
            with pytest.raises(ProviderError) as raised:
                run_model(model, prompt, stream=stream, use_async=use_async)
            assert_failure(raised.value, expected)
            assert len(skipped.sent) == index + 1, "a non-retried error is sent once"
        else:
            events = run_model(model, prompt, stream=stream, use_async=use_async)
            response = assemble(events) if stream else events[0]
            assert isinstance(response, ChatResponse)
            assert_reply(response, expected, interaction["response"]["headers"].get("request-id"))
            if stream:
                sse = interaction["response"]["sse"]
                assert texts(events) == recorded_text_deltas(sse), "text deltas pass through"
                assert deltas(events) == recorded_deltas(sse), "the delta events are what the wire says"
                opening, closing = chunks(events)
                assert opening.metadata.id == response.metadata.id and opening.metadata.usage is None
                assert closing.result is not None and closing.result.finish_reason is not None
        assert_sent_like_recorded(skipped, index)


# ------------------------------------------------------------------ the tool loop on recorded traffic


def _run_client(spec: Any, mode: str) -> ChatResponse:
    result = run_spec(mode, spec)[0].chat_response
    assert isinstance(result, ChatResponse)
    return result


@pytest.mark.parametrize(
    ("name", "modes"),
    [
        ("b_single_tool_use_roundtrip", ["call", "acall"]),
        ("c_parallel_tool_use_roundtrip", ["call", "acall"]),
        ("d_stream_parallel_tool_use_input_json_delta", ["stream", "astream"]),
    ],
)
def test_tool_loop_sends_the_recorded_follow_up(name: str, modes: list[str]) -> None:
    """The ChatClient's tool loop, run on the recorded replies, sends the recorded follow-up request."""
    for mode in modes:
        replay = Replay(PROVIDER, name)
        first = replay.recorded_request(0)["body"]
        prompt = prompt_from_recorded(first)
        assert prompt.options is not None
        options = prompt.options.model_copy(update={"tool_callbacks": ()})
        model = make_model(replay, options=options)
        client = ChatClient.builder(model).default_tools(*(TOOLS[t["name"]] for t in first["tools"])).build()
        spec = client.prompt().messages(*prompt.messages)
        response = _run_client(spec, mode)
        assert len(replay.sent) == 2
        assert_sent_like_recorded(replay, 0)
        assert_sent_like_recorded(replay, 1)
        expected = EXPECTED[name][1]
        assert isinstance(expected, Reply)
        assert response.text is not None and expected.text is not None and expected.text in response.text
        assert response.usage.prompt_tokens == sum(e.usage[0] for e in EXPECTED[name] if isinstance(e, Reply))


# ------------------------------------------------------------------ model behaviour


@dataclass
class Scripted:
    """A MockTransport handler serving canned responses in order, recording requests and their times."""

    responses: list[httpx2.Response]
    requests: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return self.responses[len(self.requests) - 1]


def _error(status: int, error_type: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    body = {"type": "error", "error": {"type": error_type, "message": "try again"}, "request_id": "req_x"}
    return httpx2.Response(status, headers=headers or {}, json=body)


def _ok(text: str = "fine") -> httpx2.Response:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    return httpx2.Response(200, json=body)


def _model_on(handler: Any, **kwargs: Any) -> AnthropicChatModel:
    transport = httpx2.MockTransport(handler)
    return AnthropicChatModel(
        "claude-test",
        api_key=KEY,
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **kwargs,
    )


@pytest.mark.parametrize(
    ("status", "error_type", "headers"),
    [
        (429, "rate_limit_error", {"retry-after": "0"}),
        (529, "overloaded_error", {"x-should-retry": "true"}),
        (500, "api_error", {}),
    ],
)
def test_retryable_errors_are_retried_until_success(status: int, error_type: str, headers: dict[str, str]) -> None:
    script = Scripted([_error(status, error_type, headers), _ok()])
    model = _model_on(script, retry=RetryPolicy(initial_backoff=0))
    assert model.call(Prompt("hi")).text == "fine"
    assert len(script.requests) == 2


def test_x_should_retry_false_stops_retries() -> None:
    script = Scripted([_error(429, "rate_limit_error", {"x-should-retry": "false"}), _ok()])
    with pytest.raises(RateLimitError) as raised:
        _model_on(script, retry=RetryPolicy(initial_backoff=0)).call(Prompt("hi"))
    assert raised.value.retryable is False
    assert len(script.requests) == 1


def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr("providers._retry.time.sleep", waits.append)
    script = Scripted([_error(429, "rate_limit_error", {"retry-after": "3"}), _ok()])
    assert _model_on(script).call(Prompt("hi")).text == "fine"
    assert waits == [3.0]


def test_stream_is_retried_while_opening_but_not_after_the_first_chunk() -> None:
    from tests.providers.test_anthropic_conformance import AnthropicWire

    wire = AnthropicWire()
    opening = Scripted([_error(529, "overloaded_error"), wire.stream_reply("Hello there", [], _usage())])
    events = list(_model_on(opening, retry=RetryPolicy(initial_backoff=0)).stream(Prompt("hi")))
    assert assemble(events).text == "Hello there" and len(opening.requests) == 2

    broken = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"m","usage":{}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"Hel"}}\n\n'
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    sse = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=broken.encode())
    midway = Scripted([sse, wire.stream_reply("again", [], _usage())])
    received: list[ModelEvent] = []
    with pytest.raises(OverloadedError) as raised:
        for event in _model_on(midway, retry=RetryPolicy(initial_backoff=0)).stream(Prompt("hi")):
            received.append(event)
    assert texts(received) == ["Hel"]
    assert len(midway.requests) == 1, "never retried once a chunk reached the caller"
    assert raised.value.status == 529 and raised.value.error_type == "overloaded_error"


def _usage() -> Any:
    from chatclient import Usage

    return Usage(prompt_tokens=5, completion_tokens=2)


def test_api_key_never_shows_in_repr_or_errors() -> None:
    script = Scripted([_error(401, "authentication_error")])
    model = _model_on(script)
    assert KEY not in repr(model) and KEY not in str(model)
    with pytest.raises(AuthenticationError) as raised:
        model.call(Prompt("hi"))
    assert KEY not in str(raised.value) and KEY not in repr(raised.value)
    assert KEY not in repr(raised.value.__dict__)
    assert script.requests[0].headers["x-api-key"] == KEY


def test_configuration_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example/anthropic")
    script = Scripted([_ok()])
    transport = httpx2.MockTransport(script)
    model = AnthropicChatModel("claude-x", http_client=httpx2.Client(transport=transport))
    model.call(Prompt("hi"))
    sent = script.requests[0]
    assert str(sent.url) == "https://proxy.example/anthropic/v1/messages"
    assert sent.headers["x-api-key"] == "env-key"
    assert json.loads(sent.content)["max_tokens"] == 4096, "max_tokens defaults: the API requires it"
    assert model.default_options.model == "claude-x"


def test_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from chatclient import ConfigurationError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicChatModel("claude-x")


def test_prompt_options_override_model_defaults_and_headers_follow_options() -> None:
    script = Scripted([_ok(), _ok()])
    model = _model_on(script, options=AnthropicChatOptions(temperature=0.2, max_tokens=100, top_k=5))
    model.call(Prompt("hi", AnthropicChatOptions(max_tokens=50, anthropic_beta=("beta-a", "beta-b"))))
    body = json.loads(script.requests[0].content)
    assert (body["model"], body["max_tokens"], body["temperature"], body["top_k"]) == ("claude-test", 50, 0.2, 5)
    assert script.requests[0].headers["anthropic-beta"] == "beta-a,beta-b"
    model.call(Prompt("hi"))
    assert "anthropic-beta" not in script.requests[1].headers
    assert json.loads(script.requests[1].content)["max_tokens"] == 100


def test_importing_the_provider_does_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, providers.anthropic; print('anthropic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
