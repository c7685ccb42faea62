"""The pure Chat Completions mapping, on the edge cases the recordings do not show."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatOptions,
    ChatResponse,
    FinishReason,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from chatclient.errors import (
    BadRequestError,
    ContextLengthExceededError,
    MalformedResponseError,
    RateLimitError,
    ServerError,
    StreamIncompleteError,
)
from chatclient.events import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from providers.openai import OpenAIChatModel, OpenAIChatOptions
from providers.openai._mapping import (
    build_request,
    error_details,
    parse_response,
    strict_schema,
)
from providers.openai._stream_parser import StreamParser
from tests.providers.model_events import assemble as assemble_events
from tests.providers.model_events import chunks, deltas


@tool(description="Get the weather of a city")
def get_weather(city: str) -> str:
    return f"Sunny in {city}"


@tool(description="Tell the time")
def now() -> str:
    return "noon"


def body(options: ChatOptions | None = None, *, stream: bool = False, platform: bool = True, **kw: Any) -> Any:
    opts = options or OpenAIChatOptions(model="m", **kw)
    return build_request(Prompt("hi", opts), opts, stream=stream, openai_platform=platform)


def chunk(choices: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "model": "m", "choices": choices if choices is not None else [], **extra}


def delta(index: int = 0, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"index": index, "delta": fields, "finish_reason": finish}


def assemble(events: list[dict[str, Any]]) -> Any:
    parser = StreamParser()
    return assemble_events([out for event in events for out in parser.feed(event)])


# ---------------------------------------------------------------------- requests


def test_messages_of_a_tool_round_trip() -> None:
    prompt = Prompt(
        [
            SystemMessage("Be brief."),
            UserMessage("Time and weather?"),
            AssistantMessage(
                "Checking.",
                tool_calls=[
                    ToolCall(id="c1", name="now"),
                    ToolCall(id="c2", name="get_weather", arguments='{"city":"Oslo"}'),
                ],
            ),
            ToolResponseMessage(
                [
                    ToolResponse(id="c1", name="now", response_data="noon"),
                    ToolResponse(id="c2", name="get_weather", response_data="x", is_error=True),
                ]
            ),
            AssistantMessage(None),
        ]
    )
    sent = build_request(prompt, OpenAIChatOptions(model="m"), stream=False)
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Time and weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
        {"role": "tool", "tool_call_id": "c2", "content": "x"},
        {"role": "assistant", "content": ""},
    ]
    assert "stream" not in sent and "tools" not in sent


def test_common_options_and_the_max_tokens_name() -> None:
    options = OpenAIChatOptions(
        model="m",
        temperature=0.2,
        top_p=0.9,
        top_k=5,
        max_tokens=100,
        stop_sequences=("END",),
        frequency_penalty=0.1,
        presence_penalty=0.3,
        seed=7,
        user="u1",
        n=2,
        reasoning_effort="low",
    )
    openai = body(options)
    assert openai["max_completion_tokens"] == 100 and "max_tokens" not in openai
    assert "top_k" not in openai, "OpenAI rejects top_k"
    assert openai["stop"] == ["END"] and openai["seed"] == 7 and openai["n"] == 2
    assert openai["reasoning_effort"] == "low" and openai["user"] == "u1"
    compatible = body(options, platform=False)
    assert compatible["max_tokens"] == 100 and "max_completion_tokens" not in compatible
    assert compatible["top_k"] == 5
    explicit = body(OpenAIChatOptions(model="m", max_tokens=1, max_completion_tokens=9), platform=False)
    assert explicit["max_completion_tokens"] == 9 and "max_tokens" not in explicit


def test_stream_flag_and_usage_request() -> None:
    assert body(stream=True)["stream_options"] == {"include_usage": True}
    assert "stream_options" not in body(OpenAIChatOptions(model="m", stream_include_usage=False), stream=True)


def test_tools_tool_choice_and_parallel_flag() -> None:
    options = OpenAIChatOptions.builder().model("m").tool_callbacks(get_weather).tool_choice("get_weather").build()
    sent = body(options.model_copy(update={"parallel_tool_calls": False}))
    (entry,) = sent["tools"]
    assert entry["type"] == "function" and entry["function"]["name"] == "get_weather"
    assert entry["function"]["parameters"]["required"] == ["city"]
    assert "strict" not in entry["function"]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    assert body(options.model_copy(update={"tool_choice": "required"}))["tool_choice"] == "required"
    without_tools = body(OpenAIChatOptions(model="m", tool_choice="none", parallel_tool_calls=True))
    assert "tool_choice" not in without_tools and "parallel_tool_calls" not in without_tools


def test_strict_tools_close_every_object() -> None:
    options = OpenAIChatOptions.builder().model("m").tool_callbacks(get_weather).set("strict_tools", True).build()
    function = body(options)["tools"][0]["function"]
    assert function["strict"] is True and function["parameters"]["additionalProperties"] is False
    nested = {
        "type": "object",
        "properties": {"a": {"type": "object", "additionalProperties": True}},
        "$defs": {"B": {"type": "object"}},
    }
    closed = strict_schema(nested)
    assert closed["additionalProperties"] is False
    assert closed["properties"]["a"]["additionalProperties"] is True, "an explicit choice is kept"
    assert closed["$defs"]["B"]["additionalProperties"] is False
    assert "additionalProperties" not in nested, "the input is not modified"


def test_output_schema_becomes_response_format() -> None:
    schema: dict[str, Any] = {"title": "City Info!", "type": "object", "properties": {"name": {"type": "string"}}}
    sent = body(OpenAIChatOptions(model="m", output_schema=schema, response_format={"type": "json_object"}))
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {"name": "City_Info_", "schema": schema}}
    strict = body(OpenAIChatOptions(model="m", output_schema={"type": "object"}, strict_output_schema=True))
    assert strict["response_format"]["json_schema"] == {
        "name": "output",
        "schema": {"type": "object", "additionalProperties": False},
        "strict": True,
    }
    assert body(OpenAIChatOptions(model="m", response_format={"type": "json_object"}))["response_format"] == {
        "type": "json_object"
    }


def test_extra_body_is_merged_last_once_by_the_shell_not_the_mapping() -> None:
    options = OpenAIChatOptions(model="m", temperature=1.0, extra_body={"temperature": 0.0, "think": False})
    assert body(options)["temperature"] == 1.0 and "think" not in body(options), "the mapping leaves it"
    sent = OpenAIChatModel("m", api_key="k").build_body(Prompt("hi", options), options, stream=False)
    assert sent["temperature"] == 0.0 and sent["think"] is False


def reply(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {"id": "r1", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}], **extra}


def test_unknown_finish_reason_is_other_and_raw_is_kept() -> None:
    response = parse_response(reply({"role": "assistant", "content": "x"}, "eos_token"))
    assert response.result is not None and response.result.finish_reason is FinishReason.OTHER
    assert response.result.metadata.extra["raw_finish_reason"] == "eos_token"


def test_stop_with_tool_calls_is_reported_as_tool_calls() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "now", "arguments": ""}}
    response = parse_response(reply({"content": "", "tool_calls": [call]}, "stop"))
    assert response.result is not None and response.result.finish_reason is FinishReason.TOOL_CALLS
    assert response.tool_calls == (ToolCall(id="c", name="now", arguments=""),), "empty arguments stay raw"
    assert response.text is None


def test_argument_objects_and_missing_ids_are_normalised() -> None:
    call = {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    (parsed,) = parse_response(reply({"tool_calls": [call]}, "tool_calls")).tool_calls
    assert parsed.id == "call_1" and parsed.wire_id == "" and json.loads(parsed.arguments) == {"city": "Oslo"}


def test_usage_details_and_deepseek_fields() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    assert parse_response(reply({"content": "x"}, usage=usage)).usage == Usage(
        prompt_tokens=10, completion_tokens=5, cache_read_tokens=4, reasoning_tokens=3
    )
    deepseek = {"prompt_tokens": 10, "completion_tokens": 5, "prompt_cache_hit_tokens": 6}
    assert parse_response(reply({"content": "x"}, usage=deepseek)).usage.cache_read_tokens == 6


def test_reasoning_content_and_refusal_go_to_metadata() -> None:
    response = parse_response(reply({"content": "4", "reasoning_content": "2+2"}))
    assert response.text == "4" and response.result is not None
    assert response.result.output.metadata == {"reasoning": "2+2", "reasoning_field": "reasoning_content"}
    refused = parse_response(reply({"content": None, "refusal": "I can't help with that."}))
    assert refused.text is None and refused.result is not None
    assert refused.result.finish_reason is FinishReason.CONTENT_FILTER
    assert refused.result.output.metadata["refusal"] == "I can't help with that."


def test_several_choices_become_several_generations() -> None:
    data = {
        "id": "r",
        "choices": [
            {"index": 0, "message": {"content": "a"}, "finish_reason": "stop"},
            {"index": 1, "message": {"content": "b"}, "finish_reason": "length"},
        ],
    }
    response = parse_response(data)
    assert [g.output.text for g in response.generations] == ["a", "b"]
    assert response.generations[1].finish_reason is FinishReason.LENGTH


@pytest.mark.parametrize(
    "data",
    [{}, {"choices": None}, {"choices": [{"message": {"content": 5}}]}, {"choices": [{"message": "x"}]}, [1], "x"],
)
def test_malformed_replies_raise_malformed_response_error(data: Any) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(data)


# ---------------------------------------------------------------------- streams


def test_usage_only_chunk() -> None:
    parser = StreamParser()
    opening, only = parser.feed(chunk([], usage={"prompt_tokens": 3, "completion_tokens": 2}))
    assert isinstance(opening, ChatResponse) and opening.metadata.id == "chatcmpl-1" and opening.metadata.usage is None
    assert isinstance(only, ChatResponse)
    assert only.generations == () and only.usage == Usage(prompt_tokens=3, completion_tokens=2)
    assert only.metadata.id == "chatcmpl-1"
    assert parser.feed(chunk([delta(content="")])) == [], "an empty delta produces no event"


def test_groq_usage_in_x_groq() -> None:
    _, only = StreamParser().feed(chunk([], x_groq={"usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    assert isinstance(only, ChatResponse) and only.usage.total_tokens == 2


def test_tool_call_with_empty_arguments() -> None:
    events = [
        chunk(
            [
                delta(
                    tool_calls=[
                        {"index": 0, "id": "c1", "type": "function", "function": {"name": "now", "arguments": ""}}
                    ]
                )
            ]
        ),
        chunk([delta(finish="tool_calls")]),
    ]
    response = assemble(events)
    assert response.tool_calls == (ToolCall(id="c1", name="now", arguments=""),)
    assert response.result.finish_reason is FinishReason.TOOL_CALLS


def test_fragments_without_index_and_reused_indexes() -> None:
    events = [
        # A server that numbers every call 0: the new id tells the calls apart.
        chunk([delta(tool_calls=[{"index": 0, "id": "a", "function": {"name": "now", "arguments": "{}"}}])]),
        chunk([delta(tool_calls=[{"index": 0, "id": "b", "function": {"name": "get_weather", "arguments": '{"ci'}}])]),
        chunk([delta(tool_calls=[{"index": 0, "function": {"arguments": 'ty":"Rome"}'}}])]),
        # A server that sends no index at all: the last call continues.
        chunk([delta(tool_calls=[{"id": "c", "function": {"name": "now", "arguments": "{"}}])]),
        chunk([delta(tool_calls=[{"function": {"arguments": "}"}}])]),
        chunk([delta(finish="stop")]),
    ]
    response = assemble(events)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("a", "now", "{}"),
        ("b", "get_weather", '{"city":"Rome"}'),
        ("c", "now", "{}"),
    ]
    assert response.result.finish_reason is FinishReason.TOOL_CALLS


def test_stream_of_several_choices_and_reasoning_content() -> None:
    events = [
        chunk([delta(0, role="assistant", content="He"), delta(1, reasoning_content="think")]),
        chunk([delta(1, content="Yo")]),
        chunk([delta(0, "stop", content="llo"), delta(1, "length")]),
    ]
    response = assemble(events)
    assert [g.output.text for g in response.generations] == ["Hello", "Yo"]
    assert response.generations[1].output.metadata == {"reasoning": "think", "reasoning_field": "reasoning_content"}
    assert response.generations[1].finish_reason is FinishReason.LENGTH


def test_stream_events_of_text_reasoning_and_fragments() -> None:
    parser = StreamParser()
    fed = [
        chunk([delta(role="assistant", content="")]),
        chunk([delta(reasoning_content="Hmm")]),
        chunk([delta(content="Hi")]),
        chunk([delta(tool_calls=[{"index": 0, "id": "c1", "type": "function", "function": {"name": "now"}}])]),
        chunk([delta(tool_calls=[{"index": 0, "function": {"arguments": "{}"}}])]),
        chunk([delta(finish="tool_calls")]),
    ]
    events = [out for event in fed for out in parser.feed(event)]
    assert deltas(events) == [
        ReasoningDelta("Hmm"),
        TextDelta("Hi"),
        ToolCallStarted("c1", "now"),
        ToolCallDelta("c1", "{}"),
    ]
    opening, closing = chunks(events)
    assert events[0] is opening and opening.generations == () and opening.metadata.id == "chatcmpl-1"
    assert closing.result is not None and closing.result.finish_reason is FinishReason.TOOL_CALLS
    expected = {"reasoning": "Hmm", "reasoning_field": "reasoning_content"}
    assert closing.result.output.metadata == expected, "the reasoning is also message metadata"
    parser.finish(saw_done=False)  # every choice has its finish reason: complete without [DONE]


def test_a_name_sent_after_the_first_fragment_restarts_the_call_once() -> None:
    response = assemble(
        [
            chunk([delta(tool_calls=[{"index": 0, "id": "c1", "function": {"arguments": ""}}])]),
            chunk([delta(tool_calls=[{"index": 0, "function": {"name": "now", "arguments": "{"}}])]),
            chunk([delta(tool_calls=[{"index": 0, "function": {"name": "now", "arguments": "}"}}])]),
            chunk([delta(finish="tool_calls")]),
        ]
    )
    assert response.tool_calls == (ToolCall(id="c1", name="now", arguments="{}"),)
    parser = StreamParser()
    parser.feed(chunk([delta(tool_calls=[{"index": 0, "id": "c1", "function": {"arguments": ""}}])]))
    (started, piece) = parser.feed(
        chunk([delta(tool_calls=[{"index": 0, "function": {"name": "n", "arguments": "{"}}])])
    )
    assert (started, piece) == (ToolCallStarted("c1", "n"), ToolCallDelta("c1", "{"))
    assert parser.feed(chunk([delta(tool_calls=[{"index": 0, "function": {"name": "n"}}])])) == []


@pytest.mark.parametrize(
    ("fed", "saw_done", "complete"),
    [
        ([], False, False),
        ([], True, False),
        ([chunk([delta(content="Hi")])], False, False),
        ([chunk([delta(content="Hi")])], True, True),
        ([chunk([delta(content="Hi")]), chunk([delta(finish="stop")])], False, True),
        ([chunk([delta(0, "stop", content="a"), delta(1, content="b")])], False, False),
        ([chunk([], usage={"prompt_tokens": 1, "completion_tokens": 0})], False, False),
    ],
    ids=["nothing", "only-done", "cut", "text-done", "finish-without-done", "one-choice-unfinished", "only-usage"],
)
def test_finish_tells_a_complete_stream_from_a_cut_one(
    fed: list[dict[str, Any]], saw_done: bool, complete: bool
) -> None:
    parser = StreamParser()
    for event in fed:
        parser.feed(event)
    if complete:
        parser.finish(saw_done)
    else:
        with pytest.raises(StreamIncompleteError):
            parser.finish(saw_done)


def test_refusal_stream() -> None:
    response = assemble([chunk([delta(refusal="No.")]), chunk([delta(finish="stop")])])
    assert response.text is None
    assert response.result.finish_reason is FinishReason.CONTENT_FILTER
    assert response.result.output.metadata["refusal"] == "No."


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        ({"message": "boom", "type": "server_error"}, ServerError),
        ({"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}, RateLimitError),
        (
            {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"},
            ContextLengthExceededError,
        ),
        ({"message": "bad", "type": "BadRequestError", "code": 400}, BadRequestError),
    ],
)
def test_mid_stream_error_event(error: dict[str, Any], cls: type[Exception]) -> None:
    parser = StreamParser()
    assert parser.feed(chunk([delta(content="partial")]))
    with pytest.raises(cls) as raised:
        parser.feed({"error": error})
    assert type(raised.value) is cls
    assert error["message"] in str(raised.value)


@pytest.mark.parametrize("event", [[1, 2], "text", {"choices": "x"}, {"choices": [{"delta": {"tool_calls": [5]}}]}])
def test_malformed_events(event: Any) -> None:
    with pytest.raises(MalformedResponseError):
        StreamParser().feed(event)


# ---------------------------------------------------------------------- error bodies


def test_error_body_shapes() -> None:
    openai = error_details({"error": {"message": "m", "type": "t", "code": "c", "param": None}})
    assert openai is not None and (openai.message, openai.error_type, openai.code) == ("m", "t", "c")
    bare = error_details({"error": "model 'x' not found"})
    assert bare is not None and bare.message == "model 'x' not found"
    vllm = error_details({"object": "error", "message": "bad", "type": "BadRequestError", "code": 400})
    assert vllm is not None and (vllm.message, vllm.error_type, vllm.code) == ("bad", "BadRequestError", None)
    assert error_details({"detail": "Not Found"}) is None
    assert error_details(["x"]) is None
