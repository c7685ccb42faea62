"""The pure Anthropic mapping: request building, reply and stream parsing, on edge cases the recordings lack."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from pydantic import JsonValue

from chatclient import (
    AssistantMessage,
    ChatResponse,
    ConfigurationError,
    FinishReason,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.errors import (
    BadRequestError,
    ContextLengthExceededError,
    MalformedResponseError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamIncompleteError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallStarted
from chatclient.options import ChatOptions, ToolCallingChatOptions
from chatclient.tools.resolve import resolve_tools
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel, AnthropicChatOptions
from providers.anthropic._mapping import (
    THINKING_METADATA_KEY,
    build_request,
    error_details,
    parse_response,
    parse_usage,
    strict_schema,
)
from providers.anthropic._stream_parser import StreamParser
from tests.providers.model_events import assemble, chunks, deltas


@tool(description="Get the weather of a city")
def get_weather(city: str) -> str:
    return city


@tool(description="The time")
def get_time() -> str:
    return "now"


TOOLS = resolve_tools([get_weather, get_time])


def body_for(messages: list[Any], **options: Any) -> dict[str, Any]:
    return build_request(Prompt(messages), AnthropicChatOptions(model="claude-x", **options), stream=False)


# ------------------------------------------------------------------------------------------ requests


def test_system_messages_are_hoisted_and_joined_in_order() -> None:
    body = body_for([SystemMessage("One."), UserMessage("hi"), SystemMessage("Two.")])
    assert body["system"] == [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body_for([SystemMessage("Only.")])["system"] == "Only."


def test_cache_system_prompt_and_cache_tools_mark_the_last_block() -> None:
    body = body_for(
        [SystemMessage("Sys"), UserMessage("hi")], cache_system_prompt=True, cache_tools=True, tool_callbacks=TOOLS
    )
    assert body["system"] == [{"type": "text", "text": "Sys", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral"}


def test_tool_round_trip_shapes_and_same_role_merging() -> None:
    calls = [
        ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="toolu_2", name="get_time", arguments=""),
        ToolCall(id="toolu_3", name="get_weather", arguments='{"city": '),
        ToolCall(id="toolu_4", name="get_weather", arguments="[1, 2]"),
    ]
    results = ToolResponseMessage(
        [
            ToolResponse(id="toolu_1", name="get_weather", response_data="Sunny"),
            ToolResponse(id="toolu_2", name="get_time", response_data=""),
            ToolResponse(id="toolu_3", name="get_weather", response_data="Bad arguments", is_error=True),
            ToolResponse(id="toolu_4", name="get_weather", response_data="Bad arguments", is_error=True),
        ]
    )
    body = body_for(
        [
            UserMessage("Weather?"),
            AssistantMessage("Checking.", tool_calls=calls),
            results,
            UserMessage("And be quick."),
            AssistantMessage(""),  # empty: skipped, the API rejects empty content
            AssistantMessage("Part one."),
            AssistantMessage("Part two."),
        ]
    )
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "text", "text": "Checking."}
    assert [b["input"] for b in assistant[1:]] == [{"city": "Oslo"}, {}, {}, {}], "unparsable or non-object → {}"
    assert all(b["type"] == "tool_use" for b in assistant[1:])
    user = body["messages"][2]["content"]
    assert user == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny"},
        {"type": "tool_result", "tool_use_id": "toolu_2"},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": "Bad arguments", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_4", "content": "Bad arguments", "is_error": True},
        {"type": "text", "text": "And be quick."},
    ], "all results of a round in one user message, before the user's text"
    assert body["messages"][3]["content"] == [
        {"type": "text", "text": "Part one."},
        {"type": "text", "text": "Part two."},
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("none", {"type": "none"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
        (None, None),
    ],
)
def test_tool_choice_mapping(choice: str | None, expected: dict[str, Any] | None) -> None:
    body = body_for([UserMessage("hi")], tool_callbacks=TOOLS, tool_choice=choice)
    assert body.get("tool_choice") == expected
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_time"]
    assert body["tools"][0]["input_schema"]["properties"] == {"city": {"type": "string"}}


def test_tool_choice_without_tools_is_not_sent_and_parallel_use_can_be_disabled() -> None:
    assert "tool_choice" not in body_for([UserMessage("hi")], tool_choice="none")
    body = body_for([UserMessage("hi")], tool_callbacks=TOOLS, disable_parallel_tool_use=True)
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_common_and_anthropic_options() -> None:
    body = body_for(
        [UserMessage("hi")],
        temperature=0.3,
        top_p=0.9,
        top_k=40,
        stop_sequences=("END",),
        frequency_penalty=0.5,
        thinking_budget=2048,
        user_id="user-7",
        service_tier="standard_only",
        extra_body={"container": "c1"},
    )
    assert body["max_tokens"] == 4096 + 2048, "max_tokens must exceed the thinking budget"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["metadata"] == {"user_id": "user-7"}
    assert (body["temperature"], body["top_p"], body["top_k"], body["stop_sequences"]) == (0.3, 0.9, 40, ["END"])
    assert body["service_tier"] == "standard_only" and "container" not in body, "extra_body is the shell's"
    assert "frequency_penalty" not in body and "stream" not in body
    assert build_request(Prompt("hi"), ChatOptions(model="m"), stream=True)["stream"] is True


def test_plain_and_tool_calling_common_options_work() -> None:
    assert build_request(Prompt("hi"), ChatOptions(model="m", max_tokens=9), stream=False)["max_tokens"] == 9
    body = build_request(Prompt("hi"), ToolCallingChatOptions(model="m", tool_callbacks=TOOLS), stream=False)
    assert len(body["tools"]) == 2


def test_missing_model_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        build_request(Prompt("hi"), None, stream=False)


def test_output_schema_becomes_output_config_with_closed_objects() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "object", "properties": {"name": {"type": "string"}}},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        },
        "$defs": {"Tag": {"type": "object", "properties": {"x": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}},
        "additionalProperties": True,
    }
    body = body_for([UserMessage("hi")], output_schema=schema)
    sent = body["output_config"]["format"]
    assert sent["type"] == "json_schema"
    assert sent["schema"]["additionalProperties"] is True, "an explicit value is kept"
    assert sent["schema"]["properties"]["city"]["additionalProperties"] is False
    assert sent["schema"]["$defs"]["Tag"]["additionalProperties"] is False
    assert sent["schema"]["$defs"]["Tag"]["properties"]["x"]["anyOf"][0]["additionalProperties"] is False
    assert strict_schema({"type": "string"}) == {"type": "string"}


def test_thinking_blocks_are_replayed_before_text_and_tool_use() -> None:
    thinking: list[JsonValue] = [
        {"type": "thinking", "thinking": "Hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "x"},
    ]
    message = AssistantMessage(
        None,
        tool_calls=[ToolCall(id="t1", name="get_time", arguments="{}")],
        metadata={THINKING_METADATA_KEY: thinking},
    )
    body = body_for([UserMessage("hi"), message])
    assert body["messages"][1]["content"][:2] == thinking
    assert body["messages"][1]["content"][2]["type"] == "tool_use"


# ------------------------------------------------------------------------------------------ replies


def reply(content: list[Any], stop_reason: str | None = "end_turn", **extra: Any) -> dict[str, Any]:
    return {"id": "msg_1", "model": "claude-x", "content": content, "stop_reason": stop_reason, **extra}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("model_context_window_exceeded", FinishReason.LENGTH),
        ("tool_use", FinishReason.TOOL_CALLS),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("pause_turn", FinishReason.OTHER),
        ("something_new", FinishReason.OTHER),
    ],
)
def test_finish_reasons(raw: str, expected: FinishReason) -> None:
    response = parse_response(reply([{"type": "text", "text": "x"}], raw))
    assert response.result is not None
    assert response.result.finish_reason is expected
    assert response.result.metadata.extra["raw_finish_reason"] == raw


def test_reply_blocks_usage_and_unknown_fields() -> None:
    data = reply(
        [
            {"type": "thinking", "thinking": "Let me see", "signature": "abc"},
            {"type": "text", "text": "A", "citations": None},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}, "caller": {"type": "direct"}},
            {"type": "text", "text": "B"},
        ],
        "stop_sequence",
        stop_sequence="END",
        usage={
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 20,
            "cache_read_input_tokens": 30,
        },
        new_field={"ignored": True},
    )
    response = parse_response(data, httpx2.Headers({"request-id": "req_9"}))
    assert response.text == "AB"
    assert response.tool_calls == (ToolCall(id="toolu_1", name="get_time", arguments="{}"),)
    assert response.usage.prompt_tokens == 60, "input + cache writes + cache reads"
    assert (response.usage.cache_write_tokens, response.usage.cache_read_tokens) == (20, 30)
    assert response.usage.completion_tokens == 5
    assert response.metadata.extra == {"request_id": "req_9"}
    assert response.result is not None and response.result.metadata.extra["stop_sequence"] == "END"
    assert response.result.output.metadata[THINKING_METADATA_KEY] == [
        {"type": "thinking", "thinking": "Let me see", "signature": "abc"}
    ]


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"id": "msg_1"},
        reply(["not a block"]),
        reply([{"type": "text"}]),
        reply([{"type": "tool_use", "id": 5, "name": "x", "input": {}}]),
    ],
)
def test_malformed_replies(data: Any) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(data)


def test_error_details_and_an_error_body_in_a_200() -> None:
    assert error_details("nope") is None and error_details({"error": "flat"}) is None
    details = error_details({"type": "error", "error": {"type": "api_error", "message": ""}})
    assert details is not None and details.message == "Anthropic API error" and details.error_type == "api_error"
    with pytest.raises(OverloadedError):
        parse_response({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def test_usage_tolerates_missing_and_null_counts() -> None:
    assert parse_usage({"output_tokens": 3, "cache_read_input_tokens": None}).prompt_tokens == 0


# ------------------------------------------------------------------------------------------ streams


def ev(data: dict[str, Any]) -> tuple[str, Any]:
    return str(data.get("type", "")), data


def start(input_tokens: int = 7) -> tuple[str, Any]:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    return ev({"type": "message_start", "message": {"id": "msg_s", "model": "claude-x", "content": [], "usage": usage}})


def feed_all(parser: StreamParser, events: list[tuple[str, Any]]) -> list[ModelEvent]:
    return [out for event in events for out in parser.feed(event)]


def test_tool_without_arguments_and_usage_only_message_delta() -> None:
    parser = StreamParser("req_1")
    events = feed_all(
        parser,
        [
            start(),
            ev({"type": "ping"}),
            ev(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "toolu_9", "name": "get_time", "input": {}},
                }
            ),
            ev({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            ev({"type": "content_block_stop", "index": 0}),
            ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}}),
            ev({"type": "some_future_event", "x": 1}),
            ev({"type": "message_stop"}),
        ],
    )
    assert parser.done
    assert deltas(events) == [ToolCallStarted("toolu_9", "get_time")], "an empty partial_json is no delta"
    response = assemble(events)
    assert response.tool_calls == (ToolCall(id="toolu_9", name="get_time", arguments=""),), "manager reads '' as {}"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (7, 12), "merged over message_start"
    assert response.metadata.id == "msg_s" and response.metadata.extra == {"request_id": "req_1"}
    assert response.result is not None and response.result.finish_reason is FinishReason.TOOL_CALLS


def test_usage_arrives_only_with_the_closing_chunk() -> None:
    parser = StreamParser()
    text_start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
    events = feed_all(parser, [start(), ev(text_start), ev(delta)])
    assert deltas(events) == [TextDelta("Hi")]
    (opening,) = chunks(events)
    assert opening.metadata.id == "msg_s" and opening.metadata.usage is None
    (closing,) = parser.feed(ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}))
    assert isinstance(closing, ChatResponse)
    assert closing.metadata.usage is not None and closing.metadata.usage.prompt_tokens == 7


def test_thinking_streams_as_reasoning_deltas_and_stays_message_metadata() -> None:
    parser = StreamParser()
    events = feed_all(
        parser,
        [
            start(),
            ev({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ev({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let "}}),
            ev({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "me"}}),
            ev({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s1"}}),
            ev({"type": "content_block_stop", "index": 0}),
            ev(
                {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "r"}}
            ),
            ev({"type": "content_block_stop", "index": 1}),
            ev({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "Hello"}}),
            ev({"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": {}}}),
            ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        ],
    )
    assert deltas(events) == [ReasoningDelta("Let "), ReasoningDelta("me"), TextDelta("Hello")]
    response = assemble(events)
    assert response.text == "Hello"
    assert response.result is not None
    assert response.result.output.metadata[THINKING_METADATA_KEY] == [
        {"type": "thinking", "thinking": "Let me", "signature": "s1"},
        {"type": "redacted_thinking", "data": "r"},
    ]


@pytest.mark.parametrize(
    "event",
    [
        ("content_block_delta", "not an object"),
        ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}),
        ev({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "?"}}),
        ev({"type": "content_block_delta", "index": 5, "delta": {"type": "input_json_delta", "partial_json": "{"}}),
        ev({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": 5, "name": "x"}}),
        ev({"type": "message_start"}),
    ],
)
def test_malformed_stream_events(event: tuple[str, Any]) -> None:
    parser = StreamParser()
    with pytest.raises(MalformedResponseError):
        parser.feed(event)


@pytest.mark.parametrize(
    ("error_type", "message", "expected", "status", "retryable"),
    [
        ("overloaded_error", "Overloaded", OverloadedError, 529, True),
        ("rate_limit_error", "Slow down", RateLimitError, 429, True),
        ("api_error", "Internal", ServerError, 500, True),
        (
            "invalid_request_error",
            "prompt is too long: 300000 tokens > 200000 maximum",
            ContextLengthExceededError,
            400,
            False,
        ),
        ("invalid_request_error", "bad", BadRequestError, 400, False),
        ("brand_new_error", "?", ServerError, 500, True),
    ],
)
def test_mid_stream_error_events(
    error_type: str, message: str, expected: type[ProviderError], status: int, retryable: bool
) -> None:
    parser = StreamParser("req_stream")
    parser.feed(start())
    with pytest.raises(ProviderError) as raised:
        parser.feed(("error", {"type": "error", "error": {"type": error_type, "message": message}}))
    error = raised.value
    assert type(error) is expected
    assert (error.status, error.retryable, error.request_id) == (status, retryable, "req_stream")
    assert error.error_type == error_type and message in str(error)


# ------------------------------------------------------------------------------------------ broken streams


def _sse_model(body: str) -> AnthropicChatModel:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    transport = httpx2.MockTransport(handler)
    return AnthropicChatModel(
        "claude-x",
        api_key="k",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=RetryPolicy(max_retries=0),
    )


MESSAGE_START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":{}}}\n\n'


TEXT_BLOCK = (
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    '"content_block":{"type":"text","text":""}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"Hel"}}\n\n'
)
DELTA = 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}}\n\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            MESSAGE_START + 'event: content_block_delta\ndata: {"type":"content_block_delta", "index": 0,\n\n',
            MalformedResponseError,
        ),
        (MESSAGE_START, StreamIncompleteError),
        ("", StreamIncompleteError),
        (MESSAGE_START + TEXT_BLOCK, StreamIncompleteError),
        (MESSAGE_START + TEXT_BLOCK + DELTA, StreamIncompleteError),
    ],
    ids=["invalid-json", "after-message-start", "empty", "mid-text", "before-message-stop"],
)
def test_broken_streams_raise_malformed_response(body: str, expected: type[MalformedResponseError]) -> None:
    model = _sse_model(body)
    with pytest.raises(expected):
        list(model.stream(Prompt("hi")))

    async def collect() -> None:
        async for _ in model.astream(Prompt("hi")):
            pass

    import asyncio

    with pytest.raises(expected):
        asyncio.run(collect())


def test_parse_response_keeps_raw_arguments_json() -> None:
    data = reply([{"type": "tool_use", "id": "t", "name": "n", "input": {"a": [1, {"b": "é"}]}}], "tool_use")
    assert json.loads(parse_response(data).tool_calls[0].arguments) == {"a": [1, {"b": "é"}]}
