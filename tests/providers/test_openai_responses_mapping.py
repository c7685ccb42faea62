"""OpenAI Responses: mapping edge cases the recordings lack, configuration, secrets and retries."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from pydantic import JsonValue

from chatclient import (
    AssistantMessage,
    ChatResponse,
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
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextLengthExceededError,
    MalformedResponseError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamIncompleteError,
)
from chatclient.events import ModelEvent, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStarted
from chatclient.tools import tool_callbacks_from
from providers._retry import RetryPolicy
from providers.openai_responses import (
    ITEM_IDS_KEY,
    REASONING_KEY,
    OpenAIResponsesChatModel,
    OpenAIResponsesChatOptions,
)
from providers.openai_responses._mapping import build_request, error_details, parse_response
from providers.openai_responses._stream_parser import StreamParser
from tests.providers.fixtures import interactions, recorded_response
from tests.providers.model_events import assemble, chunks, deltas, texts

FOLDER = "openai-responses"


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def created(model: str = "gpt-4o") -> dict[str, Any]:
    return {"type": "response.created", "response": {"id": "resp_1", "model": model, "status": "in_progress"}}


def completed(status: str = "completed", usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    response = {"id": "resp_1", "model": "gpt-4o", "status": status, "usage": usage, **extra}
    return {"type": "response.completed", "response": response}


def feed(*events: dict[str, Any]) -> list[ModelEvent]:
    parser = StreamParser()
    out = [model_event for event in events for model_event in parser.feed((str(event.get("type")), event))]
    parser.finish()
    return out


def model_on(handler: Any, **kwargs: Any) -> OpenAIResponsesChatModel:
    transport = httpx2.MockTransport(handler)
    kwargs.setdefault("retry", RetryPolicy(initial_backoff=0))
    return OpenAIResponsesChatModel(
        "gpt-4o",
        api_key="sk-unit-secret-key-0000",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        **kwargs,
    )


def body_of(messages: list[Any], **options: Any) -> dict[str, Any]:
    options.setdefault("model", "gpt-4o")
    return build_request(Prompt(messages), OpenAIResponsesChatOptions(**options), stream=False)


# ---------------------------------------------------------------------------------------------- requests


def test_options_map_onto_the_request() -> None:
    @tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    body = body_of(
        [SystemMessage("Be brief."), UserMessage("hi")],
        model="gpt-5-mini",
        temperature=0.2,
        top_p=0.9,
        top_k=5,
        stop_sequences=("END",),
        max_tokens=100,
        reasoning_effort="low",
        reasoning_summary="auto",
        parallel_tool_calls=False,
        truncation="auto",
        user="u-1",
        service_tier="flex",
        verbosity="low",
        tool_callbacks=tool_callbacks_from(lookup),
        tool_choice="lookup",
    )
    assert body["input"] == [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert body["max_output_tokens"] == 100 and "max_tokens" not in body
    assert "top_k" not in body and "stop" not in body, "the Responses API has neither"
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    assert (body["temperature"], body["top_p"], body["parallel_tool_calls"]) == (0.2, 0.9, False)
    assert (body["truncation"], body["user"], body["service_tier"]) == ("auto", "u-1", "flex")
    assert body["text"] == {"verbosity": "low"}
    assert body["tool_choice"] == {"type": "function", "name": "lookup"}
    (definition,) = body["tools"]
    assert definition["type"] == "function" and definition["name"] == "lookup" and definition["strict"] is False
    assert definition["description"] == "Look a term up."
    assert definition["parameters"] == tool_callbacks_from(lookup)[0].definition.input_schema
    assert "stream" not in body


@pytest.mark.parametrize(
    ("model", "options", "included"),
    [
        ("gpt-4o", {}, False),
        ("gpt-4.1-nano", {}, False),
        ("gpt-5-chat-latest", {}, False),
        ("gpt-5-nano", {}, True),
        ("o4-mini", {}, True),
        ("gpt-4o", {"reasoning_effort": "low"}, True),
        ("gpt-5-nano", {"store": True}, False),
        ("gpt-4o", {"include": ("message.output_text.logprobs",)}, False),
    ],
)
def test_encrypted_reasoning_is_included_only_for_stateless_reasoning(
    model: str, options: dict[str, Any], included: bool
) -> None:
    body = body_of([UserMessage("hi")], model=model, **options)
    assert ("reasoning.encrypted_content" in body.get("include", ())) is included
    assert body["store"] is bool(options.get("store"))
    if "include" in options:
        assert body["include"][0] == "message.output_text.logprobs"


def test_tool_choice_keywords_pass_through() -> None:
    for choice in ("auto", "none", "required"):
        assert body_of([UserMessage("hi")], tool_choice=choice)["tool_choice"] == choice


def test_assistant_history_items() -> None:
    """Reasoning first, then the text message, then the calls; ids only when ``store`` is on."""
    reasoning: dict[str, JsonValue] = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [],
        "content": [],
        "encrypted_content": "gAAA",
    }
    assistant = AssistantMessage(
        "Let me check.",
        tool_calls=[ToolCall(id="call_1", name="lookup", arguments="")],
        metadata={REASONING_KEY: [reasoning], ITEM_IDS_KEY: {"call_1": "fc_1"}},
    )
    results = ToolResponseMessage([ToolResponse(id="call_1", name="lookup", response_data="found", is_error=True)])
    messages = [UserMessage("q"), assistant, results]
    stateless = body_of(messages)["input"]
    assert stateless[1:] == [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me check."}]},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "found"},
    ]
    stored = body_of(messages, store=True)["input"]
    assert stored[1] == {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    assert stored[3]["id"] == "fc_1"


def test_reasoning_history_turns_on_include_and_empty_replies_are_skipped() -> None:
    empty = AssistantMessage(None, metadata={REASONING_KEY: [{"type": "reasoning", "summary": []}]})
    answered = AssistantMessage("ok", metadata={REASONING_KEY: [{"type": "reasoning", "summary": []}]})
    body = body_of([UserMessage("a"), empty, UserMessage("b"), answered, UserMessage("c")])
    assert [item.get("type", item.get("role")) for item in body["input"]] == [
        "user",
        "user",
        "reasoning",
        "assistant",
        "user",
    ]
    assert body["include"] == ["reasoning.encrypted_content"]


def test_output_schema_becomes_a_strict_flat_text_format_when_it_can() -> None:
    schema: dict[str, Any] = {
        "title": "City of Japan",
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}},
        "required": ["name", "tags"],
        "$defs": {"Tag": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}},
    }
    fmt = body_of([UserMessage("hi")], output_schema=schema)["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "City_of_Japan", True)
    assert fmt["schema"]["additionalProperties"] is False
    assert fmt["schema"]["$defs"]["Tag"]["additionalProperties"] is False
    assert "additionalProperties" not in schema, "the caller's schema is not changed"

    optional = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}
    fmt = body_of([UserMessage("hi")], output_schema=optional)["text"]["format"]
    assert (fmt["name"], fmt["strict"], fmt["schema"]) == ("output", False, optional)
    open_map = {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}
    assert body_of([UserMessage("hi")], output_schema=open_map)["text"]["format"]["strict"] is False


# ---------------------------------------------------------------------------------------------- replies


def test_empty_arguments_are_kept_raw() -> None:
    data: dict[str, Any] = {
        "id": "resp_1",
        "model": "gpt-4o",
        "status": "completed",
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "now", "arguments": ""}],
    }
    response = parse_response(data, {})
    assert response.tool_calls == (ToolCall(id="call_1", name="now", arguments=""),)
    assert response.result is not None and response.result.finish_reason is FinishReason.TOOL_CALLS
    assert response.metadata.usage is None
    events = feed(
        created(),
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**data["output"][0], "status": "in_progress"},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": data["output"][0]},
        completed(),
    )
    assert deltas(events) == [ToolCallStarted("call_1", "now")]
    assert assemble(events).tool_calls == (ToolCall(id="call_1", name="now", arguments=""),)


@pytest.mark.parametrize(
    ("status", "details", "reason", "raw"),
    [
        ("incomplete", {"reason": "max_output_tokens"}, FinishReason.LENGTH, "max_output_tokens"),
        ("incomplete", {"reason": "content_filter"}, FinishReason.CONTENT_FILTER, "content_filter"),
        ("incomplete", {"reason": "something_new"}, FinishReason.OTHER, "something_new"),
        ("incomplete", None, FinishReason.OTHER, "incomplete"),
        ("cancelled", None, FinishReason.OTHER, "cancelled"),
    ],
)
def test_finish_reasons(status: str, details: Any, reason: FinishReason, raw: str) -> None:
    data = {"status": status, "incomplete_details": details, "output": []}
    result = parse_response(data, {}).result
    assert result is not None and result.finish_reason is reason
    assert result.metadata.extra["raw_finish_reason"] == raw
    assert result.output.text is None
    streamed = assemble(feed(created(), completed(status, incomplete_details=details))).result
    assert streamed is not None and (streamed.finish_reason, streamed.metadata.extra["raw_finish_reason"]) == (
        reason,
        raw,
    )


def test_refusal_is_kept_out_of_the_text_and_flagged() -> None:
    item = {"type": "message", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    result = parse_response({"status": "completed", "output": [item]}, {}).result
    assert result is not None and result.output.text is None
    assert result.output.metadata["refusal"] == "I can't help with that."
    assert result.finish_reason is FinishReason.CONTENT_FILTER
    assert result.metadata.extra["refusal"] is True


def test_usage_only_stream() -> None:
    usage = {
        "input_tokens": 5,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens": 0,
        "output_tokens_details": None,
    }
    events = feed(created(), completed(usage=usage))
    opening, closing = chunks(events)
    assert len(events) == 2 and opening.metadata.usage is None and closing.metadata.usage is not None
    response = assemble(events)
    assert response.text is None and response.tool_calls == ()
    assert (response.usage.prompt_tokens, response.usage.cache_read_tokens, response.usage.reasoning_tokens) == (
        5,
        3,
        0,
    )
    assert (response.metadata.id, response.metadata.model) == ("resp_1", "gpt-4o")


def test_reasoning_item_reaches_the_last_chunk_metadata() -> None:
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    events = feed(
        created("gpt-5-nano"),
        {"type": "response.output_item.added", "output_index": 0, "item": {**reasoning, "encrypted_content": None}},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "delta": "Hi"},
        completed(),
    )
    last = events[-1]
    assert isinstance(last, ChatResponse)
    assert last.result is not None and last.result.output.metadata == {REASONING_KEY: [reasoning]}
    assert assemble(events).result.output.metadata[REASONING_KEY] == [reasoning]  # type: ignore[union-attr]


def test_reasoning_summary_and_reasoning_text_stream_as_reasoning_deltas() -> None:
    summary = [{"type": "summary_text", "text": "Adding numbers."}]
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": summary, "encrypted_content": "gAAA"}
    events = feed(
        created("gpt-5-nano"),
        {"type": "response.output_item.added", "output_index": 0, "item": {**reasoning, "summary": []}},
        {"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": "Adding"},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "summary_index": 0, "delta": " numbers."},
        {"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "text": "Adding numbers."},
        {"type": "response.reasoning_text.delta", "item_id": "rs_1", "content_index": 0, "delta": "raw"},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "delta": "42"},
        completed(),
    )
    assert deltas(events) == [
        ReasoningDelta("Adding"),
        ReasoningDelta(" numbers."),
        ReasoningDelta("raw"),
        TextDelta("42"),
    ]
    response = assemble(events)
    assert response.text == "42"
    assert response.result is not None and response.result.output.metadata == {REASONING_KEY: [reasoning]}


def test_arguments_done_fills_in_missed_deltas() -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    events = feed(
        created(),
        {"type": "response.output_item.added", "output_index": 0, "item": call},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"a"'},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": '{"a": 1}'},
        completed(),
    )
    assert deltas(events) == [
        ToolCallStarted("call_1", "f"),
        ToolCallDelta("call_1", '{"a"'),
        ToolCallDelta("call_1", ": 1}"),
    ]
    assert assemble(events).tool_calls[0].arguments == '{"a": 1}'


@pytest.mark.parametrize(
    "event",
    [
        {"type": "response.function_call_arguments.delta", "item_id": "fc_unknown", "delta": "{"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": None},
        {
            "type": "response.output_item.added",
            "item": {"type": "function_call", "id": "fc_1", "call_id": 7, "name": "f"},
        },
        {"type": "response.completed", "response": None},
        ["not", "an", "object"],
    ],
)
def test_malformed_events(event: Any) -> None:
    parser = StreamParser()
    with pytest.raises(MalformedResponseError):
        parser.feed(("x", event))


@pytest.mark.parametrize(
    ("event", "error", "error_type"),
    [
        ({"type": "error", "code": "server_error", "message": "boom", "param": None}, ServerError, "server_error"),
        ({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}, BadRequestError, None),
        (
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "slow"}},
            },
            RateLimitError,
            "rate_limit_exceeded",
        ),
        ({"type": "response.failed", "response": {"status": "failed", "error": None}}, ServerError, None),
        ({"type": "error", "code": "weird", "message": "?"}, ProviderError, "weird"),
    ],
)
def test_mid_stream_errors(event: dict[str, Any], error: type[ProviderError], error_type: str | None) -> None:
    parser = StreamParser()
    assert parser.feed(("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hel"}))
    with pytest.raises(error) as raised:
        parser.feed((event["type"], event))
    assert type(raised.value) is error
    if error_type is not None:
        assert raised.value.error_type == error_type


def test_failed_response_body_raises() -> None:
    data = {"status": "failed", "output": [], "error": {"code": "context_length_exceeded", "message": "too long"}}
    with pytest.raises(ContextLengthExceededError):
        parse_response(data, {})


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"output": None},
        {"status": "completed", "output": ["x"]},
        {"status": "completed", "output": [{"type": "function_call", "call_id": 7, "name": "f", "arguments": "{}"}]},
    ],
)
def test_malformed_replies(data: Any) -> None:
    with pytest.raises(MalformedResponseError):
        parse_response(data, {})


def test_unknown_items_and_events_are_ignored() -> None:
    data = {"status": "completed", "output": [{"type": "web_search_call", "id": "ws_1"}], "surprise": 1}
    assert parse_response(data, {}).text is None
    assert StreamParser().feed(("response.queued", {"type": "response.queued", "sequence_number": 0})) == []


def test_error_details() -> None:
    body = {"error": {"message": "nope", "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    details = error_details(body)
    assert details is not None and (details.message, details.error_type, details.code) == (
        "nope",
        "invalid_request_error",
        "invalid_api_key",
    )
    assert error_details({"error": "flat"}) is not None
    assert error_details(["x"]) is None and error_details({"detail": "x"}) is None


# ---------------------------------------------------------------------------------------------- the model


def text_reply() -> httpx2.Response:
    return recorded_response(interactions(FOLDER, "a_plain_text")[0])


def stream_reply() -> httpx2.Response:
    return recorded_response(interactions(FOLDER, "d_stream_text")[0])


def test_malformed_json_event_in_a_stream() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        content = sse(created()) + b"event: response.output_text.delta\ndata: {not json\n\n"
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content)

    with pytest.raises(MalformedResponseError):
        list(model_on(handler).stream(Prompt("hi")))


def test_stream_cut_before_completed_is_an_error() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Hi"}
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse(created(), delta))

    events: list[ModelEvent] = []
    with pytest.raises(StreamIncompleteError, match=r"response\.completed"):
        events.extend(model_on(handler).stream(Prompt("hi")))
    assert texts(events) == ["Hi"], "what arrived was passed through"


def test_prompt_options_win_over_model_defaults() -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return text_reply()

    model = model_on(handler, options=OpenAIResponsesChatOptions(temperature=0.1, user="default-user"))
    assert model.default_options.model == "gpt-4o" and model.default_options.temperature == 0.1
    from chatclient import ChatOptions

    model.call(Prompt("hi", ChatOptions(temperature=0.7, model="gpt-4.1")))
    assert (sent[0]["model"], sent[0]["temperature"], sent[0]["user"]) == ("gpt-4.1", 0.7, "default-user")


def test_configuration_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return text_reply()

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1/")
    model = OpenAIResponsesChatModel(http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    assert model.default_options.model == "gpt-5-mini"
    model.call(Prompt("hi"))
    assert str(seen[0].url) == "https://proxy.example/v1/responses"
    assert seen[0].headers["authorization"] == "Bearer sk-from-env"

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIResponsesChatModel()
    local = OpenAIResponsesChatModel(base_url="http://localhost:8000/v1")
    assert "authorization" not in local._http._request_headers()


def test_the_key_never_shows() -> None:
    key = "sk-unit-secret-key-0000"

    def handler(request: httpx2.Request) -> httpx2.Response:
        return recorded_response(interactions(FOLDER, "f_error_401_invalid_api_key")[0])

    model = model_on(handler)
    assert key not in repr(model) and key not in str(model.__dict__.get("_http"))
    with pytest.raises(AuthenticationError) as raised:
        model.call(Prompt("hi"))
    assert key not in str(raised.value) and key not in repr(raised.value)
    assert key not in repr(raised.value.body)


def test_importing_the_provider_does_not_import_the_sdk() -> None:
    code = "import sys, providers.openai_responses; assert 'openai' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(_repo_root()))


def _repo_root() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------- retries


class Sequenced:
    """Serves the given replies in order and counts requests."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.count = 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        reply = self.replies[min(self.count, len(self.replies) - 1)]
        self.count += 1
        result: httpx2.Response = reply()
        return result


def server_error() -> httpx2.Response:
    return recorded_response(interactions(FOLDER, "f_error_500_server_error")[0])


def rate_limited(**headers: str) -> Any:
    def reply() -> httpx2.Response:
        body = {
            "error": {"message": "Rate limit reached", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
        }
        return httpx2.Response(429, json=body, headers=headers)

    return reply


@pytest.mark.parametrize("mode", ["call", "acall", "stream", "astream"])
def test_server_errors_are_retried(mode: str) -> None:
    handler = Sequenced(server_error, stream_reply if "stream" in mode else text_reply)
    model = model_on(handler)
    if mode == "call":
        text = model.call(Prompt("hi")).text
    elif mode == "acall":
        text = asyncio.run(model.acall(Prompt("hi"))).text
    elif mode == "stream":
        text = assemble(list(model.stream(Prompt("hi")))).text
    else:

        async def collect() -> list[ModelEvent]:
            return [c async for c in model.astream(Prompt("hi"))]

        text = assemble(asyncio.run(collect())).text
    assert text == "4200 + 42 equals 4242."
    assert handler.count == 2


def test_retries_give_up() -> None:
    handler = Sequenced(server_error)
    with pytest.raises(ServerError):
        model_on(handler, retry=RetryPolicy(max_retries=2, initial_backoff=0)).call(Prompt("hi"))
    assert handler.count == 3


@pytest.mark.parametrize(("headers", "wait"), [({"retry-after": "1.5"}, 1.5), ({"retry-after-ms": "250"}, 0.25)])
def test_retry_after_is_honoured(monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], wait: float) -> None:
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    handler = Sequenced(rate_limited(**headers), text_reply)
    assert model_on(handler, retry=RetryPolicy(initial_backoff=5)).call(Prompt("hi")).text == "4200 + 42 equals 4242."
    assert waits == [wait] and handler.count == 2


def test_retry_after_beyond_the_cap_is_raised() -> None:
    handler = Sequenced(rate_limited(**{"retry-after": "3600"}), text_reply)
    with pytest.raises(RateLimitError) as raised:
        model_on(handler).call(Prompt("hi"))
    assert raised.value.retry_after == 3600 and handler.count == 1


class _BrokenStream(httpx2.SyncByteStream):
    """The first events of a recorded stream, then the connection drops."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    def __iter__(self) -> Iterator[bytes]:
        yield self.head
        raise httpx2.ReadError("connection reset")


def test_a_stream_is_not_retried_once_a_chunk_was_delivered() -> None:
    full = interactions(FOLDER, "d_stream_text")[0]["response"]["sse"].encode()
    head = full[: full.index(b"event: response.output_text.delta", full.index(b'"delta":" +"'))]

    def broken() -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_BrokenStream(head))

    handler = Sequenced(broken, stream_reply)
    events: list[ModelEvent] = []
    with pytest.raises(APIConnectionError):
        events.extend(model_on(handler).stream(Prompt("hi")))
    assert texts(events) == ["420", "0", " +"]
    assert handler.count == 1
