"""The pure Ollama mapping: edge cases the recorded traffic does not show."""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatOptions,
    FinishReason,
    Prompt,
    SystemMessage,
    ToolCall,
    ToolCallingChatOptions,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from chatclient.errors import (
    ConfigurationError,
    MalformedResponseError,
    NotFoundError,
    ServerError,
    StreamIncompleteError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.tools.resolve import resolve_tools
from providers.ollama import OllamaChatOptions
from providers.ollama._mapping import (
    build_request,
    error_details,
    parse_response,
    stream_error,
)
from providers.ollama._stream_parser import StreamParser
from tests.providers.model_events import assemble as assemble_events
from tests.providers.model_events import chunks, deltas


@tool(description="Weather of a city")
def weather(city: str) -> str:
    return city


@tool(description="Local time")
def clock() -> str:
    return "noon"


TOOLS = resolve_tools([weather, clock])


def reply(message: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "message": {"role": "assistant", **message}, "done": True, **fields}


def line(message: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"model": "m", "done": False, **fields}
    if message is not None:
        data["message"] = {"role": "assistant", **message}
    return data


# ------------------------------------------------------------------------------- requests


def test_common_and_typed_options_map_into_the_options_object() -> None:
    options = OllamaChatOptions(
        model="llama3.2",
        temperature=0.1,
        top_p=0.9,
        top_k=40,
        max_tokens=128,
        stop_sequences=("END",),
        frequency_penalty=0.5,
        presence_penalty=0.25,
        seed=7,
        num_ctx=16384,
        repeat_penalty=1.1,
        options={"mirostat": 2, "temperature": 1.5},
        keep_alive=0,
        think="high",
    )
    body = build_request(Prompt("hi"), options, stream=False)
    assert body["options"] == {
        "mirostat": 2,
        "temperature": 0.1,
        "top_p": 0.9,
        "top_k": 40,
        "num_predict": 128,
        "stop": ["END"],
        "frequency_penalty": 0.5,
        "presence_penalty": 0.25,
        "seed": 7,
        "num_ctx": 16384,
        "repeat_penalty": 1.1,
    }
    assert body["keep_alive"] == 0
    assert body["think"] == "high"
    assert body["stream"] is False


def test_num_predict_wins_over_max_tokens() -> None:
    body = build_request(Prompt("hi"), OllamaChatOptions(model="m", max_tokens=10, num_predict=99), stream=True)
    assert body["options"] == {"num_predict": 99}
    assert body["stream"] is True


def test_minimal_request_sends_no_empty_fields() -> None:
    assert build_request(Prompt("hi"), ChatOptions(model="m"), stream=False) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
    }


def test_a_model_is_required() -> None:
    with pytest.raises(ConfigurationError, match="model"):
        build_request(Prompt("hi"), None, stream=False)


def test_output_schema_becomes_format_and_wins_over_format() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
    options = OllamaChatOptions(model="m", format="json", output_schema=schema)
    assert build_request(Prompt("hi"), options, stream=False)["format"] == schema


def test_conversation_history_mapping() -> None:
    calls = [
        ToolCall(id="call_a", name="weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="call_b", name="clock", arguments=""),
        ToolCall(id="call_c", name="weather", arguments='{"city": '),
    ]
    prompt = Prompt(
        [
            SystemMessage("Be brief."),
            UserMessage("Weather and time?"),
            AssistantMessage(None, tool_calls=calls, metadata={"thinking": "I should call tools."}),
            ToolResponseMessage(
                [
                    ToolResponse(id="call_a", name="weather", response_data="Sunny"),
                    ToolResponse(id="call_b", name="clock", response_data="noon"),
                    ToolResponse(id="call_c", name="weather", response_data="bad arguments", is_error=True),
                ]
            ),
            AssistantMessage("Sunny at noon."),
        ]
    )
    messages = build_request(prompt, ChatOptions(model="m"), stream=False)["messages"]
    assert messages[:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather and time?"},
    ]
    assert messages[2] == {
        "role": "assistant",
        "content": "",
        "thinking": "I should call tools.",
        "tool_calls": [
            {"id": "call_a", "function": {"name": "weather", "arguments": {"city": "Oslo"}}},
            {"id": "call_b", "function": {"name": "clock", "arguments": {}}},
            {"id": "call_c", "function": {"name": "weather", "arguments": {}}},
        ],
    }
    assert messages[3:6] == [
        {"role": "tool", "content": "Sunny", "tool_name": "weather", "tool_call_id": "call_a"},
        {"role": "tool", "content": "noon", "tool_name": "clock", "tool_call_id": "call_b"},
        {"role": "tool", "content": "bad arguments", "tool_name": "weather", "tool_call_id": "call_c"},
    ]
    assert messages[6] == {"role": "assistant", "content": "Sunny at noon."}


def test_tools_and_tool_choice() -> None:
    def names(choice: str | None) -> list[str]:
        options = ToolCallingChatOptions(model="m", tool_callbacks=TOOLS, tool_choice=choice)
        body = build_request(Prompt("hi"), options, stream=False)
        return [t["function"]["name"] for t in body.get("tools", [])]

    assert names(None) == names("auto") == names("required") == ["weather", "clock"]
    assert names("none") == [], "no tool_choice on /api/chat: 'none' offers no tools"
    assert names("clock") == ["clock"], "a named tool is the only one offered"
    with pytest.raises(ConfigurationError, match="missing"):
        names("missing")
    tool_json = build_request(Prompt("hi"), ToolCallingChatOptions(model="m", tool_callbacks=TOOLS), stream=False)
    assert tool_json["tools"][0] == {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather of a city",
            "parameters": TOOLS[0].definition.input_schema,
        },
    }


# ------------------------------------------------------------------------------- complete replies


@pytest.mark.parametrize(
    ("done_reason", "calls", "expected"),
    [
        ("stop", False, FinishReason.STOP),
        ("stop", True, FinishReason.TOOL_CALLS),
        (None, False, FinishReason.STOP),
        (None, True, FinishReason.TOOL_CALLS),
        ("length", False, FinishReason.LENGTH),
        ("load", False, FinishReason.OTHER),
        ("something-new", False, FinishReason.OTHER),
    ],
)
def test_finish_reasons(done_reason: str | None, calls: bool, expected: FinishReason) -> None:
    message: dict[str, Any] = {"content": "" if calls else "x"}
    if calls:
        message["tool_calls"] = [{"function": {"name": "clock", "arguments": {}}}]
    data = reply(message, **({"done_reason": done_reason} if done_reason else {}))
    generation = parse_response(data).result
    assert generation is not None and generation.finish_reason is expected
    assert generation.metadata.extra == ({"raw_finish_reason": done_reason} if done_reason else {})


def test_tool_calls_without_ids_get_stable_ids_and_arguments_as_json() -> None:
    data = reply(
        {
            "content": "",
            "tool_calls": [
                {"function": {"name": "weather", "arguments": {"city": "Köln", "days": 2}}},
                {"function": {"name": "clock", "arguments": {}}},
                {"function": {"name": "clock"}},
                {"function": {"name": "weather", "arguments": '{"city":"Rome"}'}},
            ],
        }
    )
    first, again = parse_response(data), parse_response(data)
    assert first.tool_calls == (
        ToolCall(id="call_1", name="weather", arguments='{"city":"Köln","days":2}', wire_id=""),
        ToolCall(id="call_2", name="clock", arguments="{}", wire_id=""),
        ToolCall(id="call_3", name="clock", arguments="{}", wire_id=""),
        ToolCall(id="call_4", name="weather", arguments='{"city":"Rome"}', wire_id=""),
    )
    assert first == again, "deterministic within a reply"
    assert first.text is None


def test_plain_reply_without_counters_has_no_usage() -> None:
    response = parse_response(reply({"content": "hi"}))
    assert response.text == "hi"
    assert response.metadata.usage is None
    assert response.result is not None and response.result.output.metadata == {}


def test_remote_fields_are_kept() -> None:
    data = reply({"content": "hi"}, remote_model="gpt-oss:120b", remote_host="https://ollama.com:443")
    assert parse_response(data).metadata.extra == {
        "remote_model": "gpt-oss:120b",
        "remote_host": "https://ollama.com:443",
    }


@pytest.mark.parametrize(
    "data",
    [
        [],
        "text",
        {"model": "m", "done": True},
        {"model": "m", "message": "hi", "done": True},
        reply({"content": 3}),
        reply({"content": "", "tool_calls": {"function": {}}}),
        reply({"content": "", "tool_calls": [{"function": {"arguments": {}}}]}),
        reply({"content": "", "tool_calls": ["weather"]}),
        reply({"content": "x"}, eval_count="many"),
    ],
)
def test_malformed_replies(data: Any) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(data)


def test_error_object_in_a_200_body() -> None:
    with pytest.raises(ServerError, match="runner"):
        parse_response({"error": "runner terminated"})


# ------------------------------------------------------------------------------- streams


def assemble(parser: StreamParser, lines: list[dict[str, Any]]) -> tuple[list[ModelEvent], Any]:
    events = [out for event in lines for out in parser.feed(event)]
    parser.close()
    return events, assemble_events(events)


def test_stream_with_thinking_text_and_tool_calls_in_separate_lines() -> None:
    events = [
        line({"content": "", "thinking": "Let me "}),
        line({"content": "", "thinking": "check."}),
        line({"content": "Checking"}),
        line({"content": " two."}),
        line({"content": "", "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]}),
        line(
            {
                "content": "",
                "tool_calls": [{"id": "call_x", "function": {"index": 1, "name": "clock", "arguments": {}}}],
            }
        ),
        {**line({"content": ""}), "done": True, "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 9},
    ]
    streamed, response = assemble(StreamParser(), events)
    assert deltas(streamed) == [
        ReasoningDelta("Let me "),
        ReasoningDelta("check."),
        TextDelta("Checking"),
        TextDelta(" two."),
        ToolCallStarted("call_1", "weather", wire_id=""),
        ToolCallDelta("call_1", '{"city":"Oslo"}'),
        ToolCallStarted("call_x", "clock"),
        ToolCallDelta("call_x", "{}"),
    ], "each call is whole: a start and one arguments delta"
    opening, closing = chunks(streamed)
    assert streamed[0] is opening and streamed[-1] is closing and opening.metadata.model == "m"
    assert response.text == "Checking two."
    assert [c.id for c in response.tool_calls] == ["call_1", "call_x"]
    assert response.result.finish_reason is FinishReason.TOOL_CALLS
    assert response.result.output.metadata == {"thinking": "Let me check."}
    assert response.usage == Usage(prompt_tokens=5, completion_tokens=9)


def test_generated_ids_count_across_lines() -> None:
    parser = StreamParser()
    first = parser.feed(line({"content": "", "tool_calls": [{"function": {"name": "clock", "arguments": {}}}]}))
    second = parser.feed(line({"content": "", "tool_calls": [{"function": {"name": "clock", "arguments": {}}}]}))
    starts = [e.id for e in (*first, *second) if isinstance(e, ToolCallStarted)]
    assert starts == ["call_1", "call_2"]


def test_usage_only_done_line() -> None:
    parser = StreamParser()
    events = parser.feed({"model": "m", "done": True, "done_reason": "length", "prompt_eval_count": 3, "eval_count": 4})
    opening, *closing = chunks(events)
    assert len(events) == 2 and opening.metadata.model == "m" and opening.metadata.usage is None
    assert closing[0].usage == Usage(prompt_tokens=3, completion_tokens=4)
    assert closing[0].result is not None and closing[0].result.finish_reason is FinishReason.LENGTH
    assert closing[0].text == "", "an empty reply assembles to empty text, as in a complete call"
    parser.close()


def test_empty_stream_assembles_like_an_empty_call() -> None:
    _, streamed = assemble(StreamParser(), [reply({"content": ""}, done_reason="stop")])
    called = parse_response(reply({"content": ""}, done_reason="stop"))
    assert streamed.text == called.text == ""


@pytest.mark.parametrize("event", ["not an object", [1], line(message=None) | {"message": 5}])
def test_malformed_stream_lines(event: Any) -> None:
    with pytest.raises(MalformedResponseError):
        StreamParser().feed(event)


def test_stream_without_done_line_is_an_error() -> None:
    parser = StreamParser()
    parser.feed(line({"content": "partial"}))
    with pytest.raises(StreamIncompleteError, match="done"):
        parser.close()
    with pytest.raises(StreamIncompleteError):
        StreamParser().close()


def test_mid_stream_error_lines() -> None:
    parser = StreamParser()
    parser.feed(line({"content": "a"}))
    with pytest.raises(ServerError, match="out of memory") as raised:
        parser.feed({"error": "model runner ran out of memory"})
    assert raised.value.status is None and raised.value.provider == "ollama"
    with pytest.raises(NotFoundError):
        StreamParser().feed({"error": "model 'x' not found", "status": 404})


# ------------------------------------------------------------------------------- errors


def test_error_details() -> None:
    assert error_details({"error": "model 'x' not found"}).message == "model 'x' not found"  # type: ignore[union-attr]
    openai_style = error_details({"error": {"message": "unauthorized", "type": "api_error", "code": None}})
    assert openai_style is not None and (openai_style.message, openai_style.error_type) == ("unauthorized", "api_error")
    assert error_details({"detail": "nope"}) is None
    assert error_details(["error"]) is None
    assert isinstance(stream_error({"error": 12}), ServerError)
