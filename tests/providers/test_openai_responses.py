"""OpenAI Responses provider against the recorded traffic in ``tests/fixtures/provider-traffic``.

Every file of the ``openai-responses`` folder is replayed: the request we build must say what the
recorded one said, and the recorded reply must map to the right ``ChatResponse`` or error.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
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
    ToolCallback,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
)
from chatclient.errors import (
    AuthenticationError,
    ContextLengthExceededError,
    ProviderError,
    ServerError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.messages import Message
from chatclient.tools import ToolDefinition
from chatclient.tools.definition import ToolContext
from providers._retry import RetryPolicy
from providers.openai_responses import (
    ITEM_IDS_KEY,
    REASONING_KEY,
    OpenAIResponsesChatModel,
    OpenAIResponsesChatOptions,
)
from tests.providers.fixtures import Replay, fixture_files, interactions
from tests.providers.model_events import Delta, assemble, chunks, deltas, texts

FOLDER = "openai-responses"
API_KEY = "sk-test-0123456789abcdef-secret"


class RecordedTool(ToolCallback):
    """A tool whose definition is exactly the recorded one, answering with the recorded results."""

    def __init__(self, recorded: dict[str, Any], results: dict[str, str] | None = None) -> None:
        self._definition = ToolDefinition(
            name=recorded["name"], description=recorded["description"], input_schema=recorded["parameters"]
        )
        self.results = results or {}
        self.arguments: list[str] = []

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    def call(self, arguments: str, context: ToolContext | None = None) -> str:
        self.arguments.append(arguments)
        return self.results[arguments]


def make_model(replay: Replay, model: str, **options: Any) -> OpenAIResponsesChatModel:
    transport = replay.transport()
    return OpenAIResponsesChatModel(
        model,
        api_key=API_KEY,
        options=OpenAIResponsesChatOptions(**options),
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=RetryPolicy(max_retries=0),
    )


async def _collect(model: OpenAIResponsesChatModel, prompt: Prompt) -> list[ModelEvent]:
    return [event async for event in model.astream(prompt)]


def run(model: OpenAIResponsesChatModel, prompt: Prompt, mode: str) -> tuple[ChatResponse, list[ModelEvent]]:
    """The reply in ``mode``; for streams also the events, the reply being their accumulation."""
    if mode == "call":
        return model.call(prompt), []
    if mode == "acall":
        return asyncio.run(model.acall(prompt)), []
    events = list(model.stream(prompt)) if mode == "stream" else asyncio.run(_collect(model, prompt))
    return assemble(events), events


def wire_deltas(name: str, index: int) -> list[Delta]:
    """The delta events a recorded stream says, read off the wire: a function_call item added is a
    call's start (under its ``call_id``), each argument delta (keyed by ``item_id``) a delta of that
    call, text deltas text, reasoning summary/text deltas reasoning."""
    sse: str = interactions(FOLDER, name)[index]["response"]["sse"]
    expected: list[Delta] = []
    calls: dict[str, str] = {}
    for line in sse.splitlines():
        if not line.startswith("data: "):
            continue
        data = json.loads(line[len("data: ") :])
        kind = data["type"]
        if kind == "response.output_item.added" and data["item"]["type"] == "function_call":
            item = data["item"]
            calls[item["id"]] = item["call_id"]
            expected.append(ToolCallStarted(item["call_id"], item["name"]))
        elif kind == "response.function_call_arguments.delta" and data["delta"]:
            expected.append(ToolCallDelta(calls[data["item_id"]], data["delta"]))
        elif kind == "response.output_text.delta" and data["delta"]:
            expected.append(TextDelta(data["delta"]))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta") and data["delta"]:
            expected.append(ReasoningDelta(data["delta"]))
    return expected


def norm_input(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Input items reduced to what they mean: role + text for messages, the typed fields otherwise."""
    result = []
    for item in items:
        if "role" in item and item.get("type", "message") == "message":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(part["text"] for part in content)
            result.append({"role": item["role"], "text": text})
        else:
            keep = ("type", "id", "call_id", "name", "arguments", "output", "summary", "encrypted_content")
            result.append({key: item[key] for key in keep if key in item})
    return result


def user_and_system(recorded_input: list[dict[str, Any]]) -> list[Message]:
    """The conversation a recorded input list of plain messages stands for."""
    messages: list[Message] = []
    for item in recorded_input:
        content = item["content"]
        text = content if isinstance(content, str) else "".join(part["text"] for part in content)
        if item["role"] == "user":
            messages.append(UserMessage(text))
        elif item["role"] == "assistant":
            messages.append(AssistantMessage(text))
        else:
            messages.append(SystemMessage(text))
    return messages


def check_request(replay: Replay, index: int, *, stream: bool, recorded_stream: bool | None = None) -> dict[str, Any]:
    """What we sent says what the recorded request said (``recorded_stream``: how the file was
    recorded, when it is replayed in another mode)."""
    sent: dict[str, Any] = replay.sent_json(index)
    recorded = replay.recorded_request(index)["body"]
    assert replay.sent[index].url.path == "/v1/responses"
    assert replay.sent[index].headers["authorization"] == f"Bearer {API_KEY}"
    assert sent["model"] == recorded["model"]
    assert norm_input(sent["input"]) == norm_input(recorded["input"])
    assert sent.get("stream", False) is stream
    assert bool(recorded.get("stream", False)) is (stream if recorded_stream is None else recorded_stream)
    assert sent.get("tools") == recorded.get("tools")
    if "include" in recorded:
        assert sent["include"] == recorded["include"]
    if "store" in recorded:
        assert sent["store"] == recorded["store"]
    return sent


def recorded_body(name: str, index: int) -> dict[str, Any]:
    body: dict[str, Any] = interactions(FOLDER, name)[index]["response"]["body"]
    return body


def check_usage(response: ChatResponse, usage: dict[str, Any]) -> None:
    assert response.usage == Usage(
        prompt_tokens=usage["input_tokens"],
        completion_tokens=usage["output_tokens"],
        cache_read_tokens=usage["input_tokens_details"]["cached_tokens"],
        cache_write_tokens=usage["input_tokens_details"].get("cache_write_tokens", 0),
        reasoning_tokens=usage["output_tokens_details"]["reasoning_tokens"],
    )


# ---------------------------------------------------------------------------------------------- scenarios


def scenario_plain_text(mode: str) -> None:
    replay = Replay(FOLDER, "a_plain_text")
    response, _ = run(make_model(replay, "gpt-4o"), Prompt("What is 4200 + 42?"), mode)
    check_request(replay, 0, stream=False)
    assert response.text == "4200 + 42 equals 4242."
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.result.metadata.extra["raw_finish_reason"] == "completed"
    assert response.metadata.id == "resp_0bee99a5de5b12910068f9669f8f3481958652a29720d87669"
    assert response.metadata.model == "gpt-4o-2024-08-06"
    assert response.metadata.extra["request_id"] == "req_25818ebaacbf4d138f67ed6c263141e1"
    assert response.tool_calls == ()
    check_usage(response, recorded_body("a_plain_text", 0)["usage"])


def scenario_encrypted_reasoning(mode: str) -> None:
    """Stateless reasoning: the reasoning item must travel back, exactly as the recording sent it."""
    name = "b_single_function_call_with_encrypted_reasoning"
    replay = Replay(FOLDER, name)
    recorded_tools = replay.recorded_request(0)["body"]["tools"]
    weather = RecordedTool(recorded_tools[0])
    model = make_model(replay, "gpt-5-nano", tool_callbacks=(weather,))
    question = UserMessage("What's the weather in Berlin? (52.5200, 13.4050)")
    first, _ = run(model, Prompt([question]), mode)
    sent = check_request(replay, 0, stream=False)
    assert sent["store"] is False and sent["include"] == ["reasoning.encrypted_content"]
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    (call,) = first.tool_calls
    assert (call.id, call.name) == ("call_R1nRm6zHHaYdJmzUTyHeErE1", "weather")
    assert call.arguments == '{"latitude":"52.5200","longitude":"13.4050"}'
    check_usage(first, recorded_body(name, 0)["usage"])
    assert first.usage.reasoning_tokens == 128
    reasoning = first.result.output.metadata[REASONING_KEY]
    assert isinstance(reasoning, list) and len(reasoning) == 1
    assert first.result.output.metadata[ITEM_IDS_KEY] == {
        call.id: "fc_070b6a5867d3bddf016a85bef0ac3887d29ebf55abf1b738a6"
    }

    result = "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h"
    follow_up = Prompt(
        [
            question,
            first.result.output,
            ToolResponseMessage([ToolResponse(id=call.id, name="weather", response_data=result)]),
        ]
    )
    second, _ = run(model, follow_up, mode)
    check_request(replay, 1, stream=False)
    assert replay.sent_json(1)["input"] == replay.recorded_request(1)["body"]["input"], "byte-for-byte semantics"
    assert second.text is not None and second.text.startswith("Current weather in Berlin")
    assert second.result is not None and second.result.finish_reason is FinishReason.STOP
    check_usage(second, recorded_body(name, 1)["usage"])


def _parallel_tool_prompt(replay: Replay) -> tuple[list[Message], RecordedTool]:
    recorded = replay.recorded_request(0)["body"]
    tool = RecordedTool(
        recorded["tools"][0],
        {'{"password":"mellon"}': "Welcome to Moria!", '{"password":"radiance"}': "Life before Death"},
    )
    return user_and_system(recorded["input"]), tool


def scenario_parallel_calls(mode: str) -> None:
    """Two calls in one reply; with ``store`` on, their ``fc_`` ids go back as recorded."""
    name = "c_parallel_function_calls_roundtrip"
    replay = Replay(FOLDER, name)
    messages, tool = _parallel_tool_prompt(replay)
    model = make_model(replay, "gpt-4o", tool_callbacks=(tool,), store=True)
    first, _ = run(model, Prompt(messages), mode)
    sent = check_request(replay, 0, stream=False)
    assert sent["input"][0] == {"role": "developer", "content": "Use parallel tool calling."}
    assert [(c.id, c.arguments) for c in first.tool_calls] == [
        ("call_bzXaB1HDWsWy7n6bMrxJzNNa", '{"password":"mellon"}'),
        ("call_Dd4wvykCr6NttXKxRK0BFH96", '{"password":"radiance"}'),
    ]
    assert first.text is None
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    check_usage(first, recorded_body(name, 0)["usage"])
    results = ToolResponseMessage(
        [ToolResponse(id=c.id, name=c.name, response_data=tool.results[c.arguments]) for c in first.tool_calls],
    )
    second, _ = run(model, Prompt([*messages, first.result.output, results]), mode)
    check_request(replay, 1, stream=False)
    assert second.text is not None and second.text.startswith("Here are the secrets:")
    check_usage(second, recorded_body(name, 1)["usage"])


def scenario_stream_text(mode: str) -> None:
    replay = Replay(FOLDER, "d_stream_text")
    response, events = run(make_model(replay, "gpt-4o"), Prompt("What is 4200 + 42?"), mode)
    check_request(replay, 0, stream=True)
    assert texts(events) == ["420", "0", " +", " ", "42", " equals", " ", "424", "2", "."]
    assert deltas(events) == wire_deltas("d_stream_text", 0)
    assert response.text == "4200 + 42 equals 4242."
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    assert response.metadata.id == "resp_0360bd45725b0a010068f966a4c4a881959717ba17b93477ef"
    assert response.metadata.model == "gpt-4o-2024-08-06"
    assert response.metadata.extra["request_id"] == "req_3bc7ee97bb55421b83bee0eda5538142"
    assert response.usage == Usage(prompt_tokens=16, completion_tokens=11)
    opening, closing = chunks(events)
    assert events[0] is opening and opening.metadata.id == response.metadata.id and opening.metadata.usage is None
    assert events[-1] is closing and closing.usage == response.usage, "usage only in response.completed"


def scenario_stream_parallel_calls(mode: str) -> None:
    """Argument deltas keyed by ``item_id`` join under each ``call_id``; the follow-up streams text."""
    name = "d_stream_parallel_function_call_deltas"
    replay = Replay(FOLDER, name)
    messages, tool = _parallel_tool_prompt(replay)
    model = make_model(replay, "gpt-4o", tool_callbacks=(tool,), store=True)
    first, events = run(model, Prompt(messages), mode)
    check_request(replay, 0, stream=True)
    assert deltas(events) == wire_deltas(name, 0), "a start as each item is added, then one delta per delta"
    started = [e.id for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["call_sKC7OABqf2A2PTLCm0CLeRWV", "call_OdR3s3xop0vtgkDyWRMLafuH"]
    assert len([e for e in events if isinstance(e, ToolCallDelta)]) == 7 + 6
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_sKC7OABqf2A2PTLCm0CLeRWV", "secret_retrieval_tool", '{"password":"mellon"}'),
        ("call_OdR3s3xop0vtgkDyWRMLafuH", "secret_retrieval_tool", '{"password":"radiance"}'),
    ]
    assert first.result is not None and first.result.finish_reason is FinishReason.TOOL_CALLS
    assert first.usage == Usage(prompt_tokens=36, completion_tokens=54)
    results = ToolResponseMessage(
        [ToolResponse(id=c.id, name=c.name, response_data=tool.results[c.arguments]) for c in first.tool_calls]
    )
    second, events = run(model, Prompt([*messages, first.result.output, results]), mode)
    check_request(replay, 1, stream=True)
    assert len(texts(events)) > 10 and deltas(events) == wire_deltas(name, 1)
    assert second.text is not None and second.text.startswith("Here are the secrets")
    assert second.result is not None and second.result.finish_reason is FinishReason.STOP


def scenario_structured_output(mode: str) -> None:
    replay = Replay(FOLDER, "e_structured_output_json_schema")
    recorded = replay.recorded_request(0)["body"]
    schema = copy.deepcopy(recorded["text"]["format"]["schema"])
    model = make_model(replay, "gpt-4o")
    prompt = Prompt(user_and_system(recorded["input"]), OpenAIResponsesChatOptions(output_schema=schema))
    response, _ = run(model, prompt, mode)
    sent = check_request(replay, 0, stream=False)
    assert sent["text"] == recorded["text"], "text.format {type, name, schema, description, strict}, flat"
    assert (
        response.text
        == '{"title":"THE NAME OF THE WIND","author":{"first_name":"Patrick","last_name":"Rothfuss"},"rating":7}'
    )
    assert response.result is not None and response.result.finish_reason is FinishReason.STOP
    check_usage(response, recorded_body("e_structured_output_json_schema", 0)["usage"])


def _error_scenario(
    name: str, model_name: str, error: type[ProviderError], status: int, error_type: str, request_id: str
) -> Callable[[str], None]:
    def scenario(mode: str) -> None:
        replay = Replay(FOLDER, name)
        recorded = replay.recorded_request(0)["body"]
        with pytest.raises(error) as raised:
            run(make_model(replay, model_name), Prompt(user_and_system(recorded["input"])), mode)
        check_request(replay, 0, stream=mode in ("stream", "astream"), recorded_stream=False)
        assert len(replay.sent) == 1
        assert type(raised.value) is error
        assert raised.value.status == status
        assert raised.value.error_type == error_type
        assert raised.value.request_id == request_id
        assert raised.value.retry_after is None
        assert raised.value.message == recorded_body(name, 0)["error"]["message"]
        assert API_KEY not in str(raised.value) and API_KEY not in repr(raised.value)

    return scenario


SCENARIOS: dict[str, tuple[tuple[str, ...], Callable[[str], None]]] = {
    "a_plain_text": (("call", "acall"), scenario_plain_text),
    "b_single_function_call_with_encrypted_reasoning": (("call", "acall"), scenario_encrypted_reasoning),
    "c_parallel_function_calls_roundtrip": (("call", "acall"), scenario_parallel_calls),
    "d_stream_text": (("stream", "astream"), scenario_stream_text),
    "d_stream_parallel_function_call_deltas": (("stream", "astream"), scenario_stream_parallel_calls),
    "e_structured_output_json_schema": (("call", "acall"), scenario_structured_output),
    "f_error_400_context_length_exceeded": (
        ("call", "acall", "stream", "astream"),
        _error_scenario(
            "f_error_400_context_length_exceeded",
            "gpt-5-nano",
            ContextLengthExceededError,
            400,
            "context_length_exceeded",
            "<X_REQUEST_ID>",
        ),
    ),
    "f_error_401_invalid_api_key": (
        ("call", "acall", "stream", "astream"),
        _error_scenario(
            "f_error_401_invalid_api_key",
            "gpt-4o",
            AuthenticationError,
            401,
            "invalid_api_key",
            "req_39477683f0a842109fac21a8bf24c001",
        ),
    ),
    "f_error_500_server_error": (
        ("call", "acall", "stream", "astream"),
        _error_scenario("f_error_500_server_error", "gpt-4.1-nano", ServerError, 500, "server_error", "<X_REQUEST_ID>"),
    ),
}


def test_every_fixture_file_is_replayed() -> None:
    assert set(fixture_files(FOLDER)) == set(SCENARIOS)


@pytest.mark.parametrize(
    ("name", "mode"),
    [(name, mode) for name in fixture_files(FOLDER) for mode in SCENARIOS.get(name, (("call",), None))[0]],
)
def test_fixture(name: str, mode: str) -> None:
    if name not in SCENARIOS:
        pytest.fail(f"no scenario replays {FOLDER}/{name}.yaml")
    SCENARIOS[name][1](mode)


# ---------------------------------------------------------------------------------------------- through the client


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_tool_loop_carries_encrypted_reasoning(mode: str) -> None:
    """The real tool loop keeps the reasoning metadata on the assistant message it sends back."""
    replay = Replay(FOLDER, "b_single_function_call_with_encrypted_reasoning")
    arguments = '{"latitude":"52.5200","longitude":"13.4050"}'
    weather = RecordedTool(
        replay.recorded_request(0)["body"]["tools"][0],
        {arguments: "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h"},
    )
    client = ChatClient.builder(make_model(replay, "gpt-5-nano")).default_tools(weather).build()
    spec = client.prompt("What's the weather in Berlin? (52.5200, 13.4050)")
    text = spec.call().content() if mode == "call" else asyncio.run(spec.acall().content())
    assert weather.arguments == [arguments]
    assert replay.sent_json(1)["input"] == replay.recorded_request(1)["body"]["input"]
    assert text is not None and text.startswith("Current weather in Berlin")
