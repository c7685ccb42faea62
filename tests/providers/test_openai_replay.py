"""Every recorded Chat Completions exchange (OpenAI's and Ollama's OpenAI layer), replayed.

For each file we rebuild the conversation, send it through ``OpenAIChatModel`` on the recorded
replies, and check (a) that what we sent means what the recorded request meant, and (b) that the
recorded reply maps to the right text, tool calls, usage, finish reason or error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx2
import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatResponse,
    FinishReason,
    Prompt,
    SystemMessage,
    Usage,
    UserMessage,
    tool,
)
from chatclient.client import ChatClientRequestSpec
from chatclient.errors import (
    AuthenticationError,
    BadRequestError,
    ProviderError,
    RateLimitError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.testing.advisor_kit import run_spec
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel, OpenAIChatOptions

from .fixtures import Replay, fixture_files, interactions
from .model_events import Delta, assemble, chunks, deltas, reasoning, texts

OPENAI = "openai-chat"
OLLAMA = "ollama"
OLLAMA_BASE = "http://localhost:11434/v1"
API_KEY = "sk-replay-0123456789"


def handled_files() -> list[tuple[str, str]]:
    return [(OPENAI, name) for name in fixture_files(OPENAI)] + [
        (OLLAMA, name) for name in fixture_files(OLLAMA) if name.startswith("openai_compat_")
    ]


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------------- helpers


def make_model(
    replay: Replay,
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = API_KEY,
    options: OpenAIChatOptions | None = None,
) -> OpenAIChatModel:
    transport = replay.transport()
    return OpenAIChatModel(
        model,
        api_key=api_key,
        base_url=base_url,
        options=options,
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=RetryPolicy(max_retries=0),
    )


def run_model(model: OpenAIChatModel, prompt: Prompt, mode: str) -> tuple[ChatResponse, list[ModelEvent]]:
    """The reply and, for streams, the events."""
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


def run_client(spec: ChatClientRequestSpec, mode: str) -> ChatResponse:
    """The final reply of a whole tool loop, in one of the four modes."""
    response = run_spec(mode, spec)[0].chat_response
    assert response is not None
    return response


def _norm_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages reduced to their meaning: an assistant tool-call message has no text whether it
    says ``content: ""``, ``null`` or nothing; arguments compare as JSON; echoed reasoning is ignored."""
    out = []
    for message in messages:
        role = message["role"]
        entry: dict[str, Any] = {"role": role}
        if role == "tool":
            entry.update(tool_call_id=message["tool_call_id"], content=message["content"])
        elif role == "assistant" and message.get("tool_calls"):
            entry["content"] = message.get("content") or None
            entry["tool_calls"] = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                for c in message["tool_calls"]
            ]
        else:
            entry["content"] = message["content"]
        out.append(entry)
    return out


def _tool_shapes(tools: Sequence[dict[str, Any]] | None) -> dict[str, tuple[list[str], list[str]]]:
    """Tool name -> (property names, required names): what the model is told it may call."""
    shapes = {}
    for entry in tools or ():
        function = entry["function"]
        parameters = function.get("parameters") or {}
        shapes[function["name"]] = (
            sorted(parameters.get("properties") or {}),
            sorted(parameters.get("required") or []),
        )
    return shapes


PASSED_THROUGH = ("enable_thinking", "web_search_options", "seed")


def assert_request_matches(replay: Replay, index: int) -> None:
    sent = replay.sent_json(index)
    recorded_request = replay.recorded_request(index)
    recorded = recorded_request["body"]
    request = replay.sent[index]
    assert request.method == "POST"
    assert request.url.path.endswith("/chat/completions")
    if "path" in recorded_request:
        assert request.url.path == recorded_request["path"]
    assert sent["model"] == recorded["model"]
    assert _norm_messages(sent["messages"]) == _norm_messages(recorded["messages"])
    assert _tool_shapes(sent.get("tools")) == _tool_shapes(recorded.get("tools"))
    assert bool(sent.get("stream")) == bool(recorded.get("stream"))
    if recorded.get("stream"):
        assert sent.get("stream_options") == recorded.get("stream_options")
    assert sent.get("response_format") == recorded.get("response_format")
    for key in PASSED_THROUGH:
        assert sent.get(key) == recorded.get(key), key
    recorded_auth = "authorization" in recorded_request["headers"]
    if recorded_auth:
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"


def recorded_body(replay: Replay, index: int) -> dict[str, Any]:
    body: dict[str, Any] = interactions(replay.provider, replay.name)[index]["response"]["body"]
    return body


def recorded_events(replay: Replay, index: int) -> list[dict[str, Any]]:
    sse: str = interactions(replay.provider, replay.name)[index]["response"]["sse"]
    return [
        json.loads(line[len("data: ") :])
        for line in sse.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def text_deltas(events: list[dict[str, Any]]) -> list[str]:
    return [
        choice["delta"]["content"]
        for event in events
        for choice in event["choices"]
        if choice.get("delta", {}).get("content")
    ]


def wire_deltas(events: list[dict[str, Any]]) -> list[Delta]:
    """The delta events the recorded stream says, read off the wire: reasoning (``reasoning`` or
    ``reasoning_content``), then text, then the tool-call fragments of each delta; a fragment with an
    ``id`` starts a call, later fragments of its ``index`` are argument deltas of that call."""
    expected: list[Delta] = []
    ids: dict[tuple[int, int], str] = {}
    for event in events:
        for choice in event["choices"]:
            index, delta = choice["index"], choice.get("delta") or {}
            if reasoning := delta.get("reasoning_content") or delta.get("reasoning"):
                expected.append(ReasoningDelta(reasoning, index))
            if delta.get("content"):
                expected.append(TextDelta(delta["content"], index))
            for fragment in delta.get("tool_calls") or ():
                function = fragment.get("function") or {}
                if "id" in fragment:
                    ids[(index, fragment["index"])] = fragment["id"]
                    expected.append(ToolCallStarted(fragment["id"], function["name"], index, fragment["type"]))
                if function.get("arguments"):
                    call_id = ids[(index, fragment["index"])]
                    expected.append(ToolCallDelta(call_id, function["arguments"], index))
    return expected


# ---------------------------------------------------------------------- tools of the recordings


@tool(description="Get the temperature of a city")
def get_temperature(city: str) -> str:
    return "20.0"


SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}


@tool(description="A tool that requires a password to retrieve a secret.")
def secret_retrieval_tool(password: str) -> str:
    return SECRETS[password]


@tool(description="Gets current weather for a location")
def weather(latitude: str, longitude: str) -> str:
    return f"Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h"


@tool(description="Gets the best language to learn")
def best_language_to_learn() -> str:
    return "Ruby"


# ---------------------------------------------------------------------- cases

Case = Callable[[str], None]
CASES: dict[tuple[str, str], tuple[Sequence[str], Case]] = {}
CALLS = ("call", "acall")
STREAMS = ("stream", "astream")


def case(provider: str, name: str, modes: Sequence[str]) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[(provider, name)] = (modes, fn)
        return fn

    return register


@case(OPENAI, "a_plain_text", CALLS)
def _a_plain_text(mode: str) -> None:
    replay = Replay(OPENAI, "a_plain_text")
    response, _ = run_model(make_model(replay, "gpt-4o"), Prompt("What is 4200 + 42?"), mode)
    assert_request_matches(replay, 0)
    assert response.text == recorded_body(replay, 0)["choices"][0]["message"]["content"] == r"\(4200 + 42 = 4242\)."
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.result.metadata.extra["raw_finish_reason"] == "stop"
    assert response.usage == Usage(prompt_tokens=16, completion_tokens=12)
    assert response.metadata.id == "chatcmpl-CRkJFgcA6BuMrBur38ZHUXgT6zRjg"
    assert response.metadata.model == "gpt-4o-2024-08-06"
    assert response.metadata.extra["request_id"] == "req_dd792cdddf7845ec888b05e89c829478"
    assert response.metadata.extra["system_fingerprint"] == "fp_f64f290af2"


@case(OPENAI, "b_single_tool_call_roundtrip", CALLS)
def _b_single_tool_call(mode: str) -> None:
    replay = Replay(OPENAI, "b_single_tool_call_roundtrip")
    client = ChatClient.builder(make_model(replay, "gpt-4.1-mini")).default_tools(get_temperature).build()
    spec = client.prompt().system("You are a helpful assistant.").user("What is the temperature in Tokyo?")
    response = run_client(spec, mode)
    assert len(replay.sent) == 2
    assert_request_matches(replay, 0)
    assert_request_matches(replay, 1)
    assert response.text == "The temperature in Tokyo is currently 20.0 degrees Celsius."
    assert response.usage == Usage(prompt_tokens=50 + 75, completion_tokens=15 + 15)


def _first_tool_reply(replay: Replay, model: str, tools: Sequence[Any], prompt: Prompt, mode: str) -> ChatResponse:
    options = OpenAIChatOptions.builder().tool_callbacks(*tools).build()
    response, _ = run_model(make_model(replay, model), prompt.with_options(options), mode)
    return response


@case(OPENAI, "c_parallel_tool_calls_roundtrip", CALLS)
def _c_parallel(mode: str) -> None:
    question = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
    # The model's reply on its own: both calls, in order, with their ids.
    replay = Replay(OPENAI, "c_parallel_tool_calls_roundtrip")
    prompt = Prompt([SystemMessage("Use parallel tool calling."), UserMessage(question)])
    first = _first_tool_reply(replay, "gpt-4o", [secret_retrieval_tool], prompt, mode)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("call_v6LacIrChvs6ITVpIZqy5tFc", "secret_retrieval_tool", {"password": "mellon"}),
        ("call_onyWzk4mLTGKzW9cthmf4Llq", "secret_retrieval_tool", {"password": "radiance"}),
    ]
    assert first.text is None
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    assert first.usage == Usage(prompt_tokens=75, completion_tokens=53)
    # The whole round trip through the tool loop.
    replay = Replay(OPENAI, "c_parallel_tool_calls_roundtrip")
    client = ChatClient.builder(make_model(replay, "gpt-4o")).default_tools(secret_retrieval_tool).build()
    response = run_client(client.prompt().system("Use parallel tool calling.").user(question), mode)
    assert_request_matches(replay, 0)
    assert_request_matches(replay, 1)
    assert response.text is not None and "Welcome to Moria!" in response.text and "Life before Death" in response.text


@case(OPENAI, "d_stream_text_with_usage", STREAMS)
def _d_stream_text(mode: str) -> None:
    replay = Replay(OPENAI, "d_stream_text_with_usage")
    response, events = run_model(make_model(replay, "gpt-4o"), Prompt("What is 4200 + 42?"), mode)
    assert_request_matches(replay, 0)
    assert texts(events) == text_deltas(recorded_events(replay, 0)), "text deltas pass through one for one"
    assert deltas(events) == wire_deltas(recorded_events(replay, 0)) and len(texts(events)) == 10
    assert response.text == "4200 + 42 equals 4242."
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.usage == Usage(prompt_tokens=16, completion_tokens=10)
    opening, finish, usage = chunks(events)
    assert events[0] is opening and opening.metadata.id == response.metadata.id, "the id comes first"
    assert finish.result is not None and finish.result.finish_reason is FinishReason.STOP
    assert events[-1] is usage and usage.generations == () and usage.usage == response.usage, "usage comes last"
    assert response.metadata.id == "chatcmpl-CoDWl5rS0pF10P0W0TDVgY3NA26dk"
    assert response.metadata.extra["request_id"] == "req_14db9386e2cc461ca7246f851dca7b70"


@case(OPENAI, "d_stream_parallel_tool_call_deltas", STREAMS)
def _d_stream_tools(mode: str) -> None:
    question = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
    replay = Replay(OPENAI, "d_stream_parallel_tool_call_deltas")
    prompt = Prompt([SystemMessage("Use parallel tool calling."), UserMessage(question)])
    options = OpenAIChatOptions.builder().tool_callbacks(secret_retrieval_tool).build()
    first, events = run_model(make_model(replay, "gpt-4o"), prompt.with_options(options), mode)
    ids = ["call_M26z19sncd7b4LBgzKRRbaUE", "call_KPXe5NX7IcKkaBUhc6dto2QV"]
    assert deltas(events) == wire_deltas(recorded_events(replay, 0)), "every recorded fragment is passed on as it came"
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.id, e.name) for e in started] == [(i, "secret_retrieval_tool") for i in ids]
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) == 10 and {f.id for f in fragments} == set(ids), "keyed by the call id, not the index"
    assert [(c.id, json.loads(c.arguments)) for c in first.tool_calls] == [
        (ids[0], {"password": "mellon"}),
        (ids[1], {"password": "radiance"}),
    ]
    assert first.text is None
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    assert first.usage == Usage(prompt_tokens=75, completion_tokens=53)
    # The streamed round trip through the tool loop.
    replay = Replay(OPENAI, "d_stream_parallel_tool_call_deltas")
    client = ChatClient.builder(make_model(replay, "gpt-4o")).default_tools(secret_retrieval_tool).build()
    response = run_client(client.prompt().system("Use parallel tool calling.").user(question), mode)
    assert_request_matches(replay, 0)
    assert_request_matches(replay, 1)
    expected = "".join(text_deltas(recorded_events(replay, 1)))
    assert response.text == expected and "Welcome to Moria!" in expected


@case(OPENAI, "e_structured_output_json_schema", CALLS)
def _e_structured(mode: str) -> None:
    replay = Replay(OPENAI, "e_structured_output_json_schema")
    spec = replay.recorded_request(0)["body"]["response_format"]["json_schema"]
    options = OpenAIChatOptions(output_schema=spec["schema"], output_schema_name="Book", strict_output_schema=True)
    prompt = Prompt("Please recommend the most popular book by Patrick Rothfuss", options)
    response, _ = run_model(make_model(replay, "gpt-4o"), prompt, mode)
    assert_request_matches(replay, 0)
    assert response.text is not None
    assert json.loads(response.text) == {
        "title": "THE NAME OF THE WIND",
        "author": {"first_name": "Patrick", "last_name": "Rothfuss"},
        "rating": 7,
    }
    assert response.usage == Usage(prompt_tokens=172, completion_tokens=29)


def _expect_error(replay: Replay, model: OpenAIChatModel, prompt: Prompt, mode: str) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        run_model(model, prompt, mode)
    assert len(replay.sent) == 1
    assert_request_matches(replay, 0)
    assert API_KEY not in str(raised.value) and API_KEY not in repr(raised.value)
    return raised.value


@case(OPENAI, "f_error_400_invalid_request", CALLS)
def _f_400(mode: str) -> None:
    replay = Replay(OPENAI, "f_error_400_invalid_request")
    options = OpenAIChatOptions(extra_body={"web_search_options": {"search_context_size": "low"}})
    prompt = Prompt([SystemMessage("You are a helpful assistant."), UserMessage("What day is today?")], options)
    error = _expect_error(replay, make_model(replay, "gpt-4o"), prompt, mode)
    assert type(error) is BadRequestError
    assert error.status == 400 and error.error_type == "invalid_request_error"
    assert error.message == "Web search options not supported with this model."
    assert not error.retryable


@case(OPENAI, "f_error_401_invalid_api_key", CALLS)
def _f_401(mode: str) -> None:
    replay = Replay(OPENAI, "f_error_401_invalid_api_key")
    prompt = Prompt("This should fail with AuthenticationError")
    error = _expect_error(replay, make_model(replay, "gpt-4o"), prompt, mode)
    assert type(error) is AuthenticationError
    assert error.status == 401 and error.error_type == "invalid_api_key"
    assert error.request_id == "req_1963efc19b3b4865af98403581d580af"
    assert "Incorrect API key provided" in str(error)


@case(OPENAI, "f_error_429_rate_limit_tpm", CALLS)
def _f_429(mode: str) -> None:
    replay = Replay(OPENAI, "f_error_429_rate_limit_tpm")
    history: list[Any] = []
    for _ in range(5):
        history += [UserMessage("<MASSIVE_TEXT>"), AssistantMessage("<MASSIVE_TEXT>")]
    error = _expect_error(replay, make_model(replay, "gpt-4.1-nano"), Prompt([*history, UserMessage("Hi")]), mode)
    assert type(error) is RateLimitError
    assert error.status == 429 and error.error_type == "rate_limit_exceeded"
    assert error.retry_after is None, "no retry-after header was sent"
    assert error.request_id == "<X_REQUEST_ID>"
    assert "Request too large" in error.message


@case(OLLAMA, "openai_compat_a_plain_text", CALLS)
def _ollama_a(mode: str) -> None:
    replay = Replay(OLLAMA, "openai_compat_a_plain_text")
    model = make_model(replay, "qwen3", base_url=OLLAMA_BASE, api_key=None)
    response, _ = run_model(model, Prompt("What's 2 + 2?"), mode)
    assert_request_matches(replay, 0)
    assert "authorization" not in replay.sent[0].headers, "a local server gets no credentials"
    assert str(replay.sent[0].url) == f"{OLLAMA_BASE}/chat/completions"
    message = recorded_body(replay, 0)["choices"][0]["message"]
    assert response.text == message["content"]
    assert response.result is not None
    assert response.result.output.metadata["reasoning"] == message["reasoning"]
    assert "Okay, let's see" not in (response.text or ""), "reasoning stays out of the answer"
    assert response.usage == Usage(prompt_tokens=18, completion_tokens=295)
    assert response.metadata.id == "chatcmpl-539"
    assert response.metadata.extra["system_fingerprint"] == "fp_ollama"


@case(OLLAMA, "openai_compat_c_parallel_tool_calls_roundtrip", CALLS)
def _ollama_c(mode: str) -> None:
    question = "What's the weather in Berlin (52.5200, 13.4050) and what's the best language to learn?"
    options = OpenAIChatOptions(extra_body={"enable_thinking": False})
    replay = Replay(OLLAMA, "openai_compat_c_parallel_tool_calls_roundtrip")
    model = make_model(replay, "qwen3", base_url=OLLAMA_BASE, api_key=None, options=options)
    client = ChatClient.builder(model).default_tools(weather, best_language_to_learn).build()
    response = run_client(client.prompt(question), mode)
    assert_request_matches(replay, 0)
    assert_request_matches(replay, 1)
    assert response.text is not None and "**Ruby**" in response.text
    assert response.usage == Usage(prompt_tokens=235 + 603, completion_tokens=320 + 269)
    # The first reply on its own: an empty content is no text, "{}" arguments stay as they are.
    replay = Replay(OLLAMA, "openai_compat_c_parallel_tool_calls_roundtrip")
    first = _first_tool_reply(replay, "qwen3", [weather, best_language_to_learn], Prompt(question), mode)
    assert first.text is None
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_blwig54z", "weather", '{"latitude":"52.5200","longitude":"13.4050"}'),
        ("call_k7oscaqs", "best_language_to_learn", "{}"),
    ]
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    assert str(first.result.output.metadata["reasoning"]).startswith("Okay, let me tackle this user query.")


@case(OLLAMA, "openai_compat_d_stream_tool_call", STREAMS)
def _ollama_d(mode: str) -> None:
    replay = Replay(OLLAMA, "openai_compat_d_stream_tool_call")
    options = OpenAIChatOptions.builder().tool_callbacks(weather).set("extra_body", {"enable_thinking": False}).build()
    model = make_model(replay, "qwen3", base_url=OLLAMA_BASE, api_key=None)
    prompt = Prompt("What's the weather in Berlin? (52.5200, 13.4050)", options)
    response, events = run_model(model, prompt, mode)
    assert_request_matches(replay, 0)
    assert texts(events) == [], "reasoning deltas never show up as answer text"
    assert deltas(events) == wire_deltas(recorded_events(replay, 0))
    assert [type(e) for e in deltas(events)][-2:] == [ToolCallStarted, ToolCallDelta], "the whole call in one chunk"
    assert response.text is None
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_blqyt530", "weather", {"latitude": "52.5200", "longitude": "13.4050"})
    ]
    assert response.result is not None and response.result.finish_reason is FinishReason.TOOL_CALLS
    wire_reasoning = "".join(
        choice["delta"].get("reasoning", "") for event in recorded_events(replay, 0) for choice in event["choices"]
    )
    assert response.result.output.metadata["reasoning"] == wire_reasoning
    assert "".join(reasoning(events)) == wire_reasoning, "reasoning streams as ReasoningDelta too"
    assert response.usage == Usage(prompt_tokens=195, completion_tokens=140)
    assert response.metadata.id == "chatcmpl-732"


@case(OLLAMA, "openai_compat_e_json_schema", CALLS)
def _ollama_e(mode: str) -> None:
    replay = Replay(OLLAMA, "openai_compat_e_json_schema")
    schema = replay.recorded_request(0)["body"]["response_format"]["json_schema"]["schema"]
    model = make_model(replay, "qwen3:0.6b", base_url=OLLAMA_BASE, api_key=None)
    response, _ = run_model(
        model, Prompt("What is the capital of France?", OpenAIChatOptions(output_schema=schema)), mode
    )
    assert_request_matches(replay, 0)
    assert response.text is not None and json.loads(response.text) == {"city": "Paris", "country": "France"}
    assert response.result is not None and "reasoning" in response.result.output.metadata
    assert response.usage == Usage(prompt_tokens=136, completion_tokens=15)


@case(OLLAMA, "openai_compat_f_error_401", CALLS)
def _ollama_f_401(mode: str) -> None:
    replay = Replay(OLLAMA, "openai_compat_f_error_401")
    model = make_model(replay, "gpt-oss:120b", base_url="https://ollama.com/v1")
    error = _expect_error(replay, model, Prompt("Hello"), mode)
    assert type(error) is AuthenticationError
    assert error.status == 401 and error.error_type == "api_error" and error.message == "Unauthorized"
    assert error.request_id == "<X_REQUEST_ID>"


# ---------------------------------------------------------------------- the tests


def test_every_recorded_file_has_a_case() -> None:
    assert set(CASES) == set(handled_files())


@pytest.mark.parametrize(
    ("provider", "name", "mode"),
    [(provider, name, mode) for (provider, name), (modes, _) in sorted(CASES.items()) for mode in modes],
)
def test_replay(provider: str, name: str, mode: str) -> None:
    CASES[(provider, name)][1](mode)
