"""``FallbackChatModel``: the next model answers when a provider is down, never for a bad request, a
stream only before its first delta, observers and metadata name the model that answered, and a turn
paused for confirmation resumes on whichever model answers."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from chatclient import (
    ChatClient,
    Prompt,
    ToolCallDecision,
    ToolCallDecisions,
    awaiting_decision,
    tool,
)
from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextLengthExceededError,
    DeadlineExceeded,
    OverloadedError,
    RateLimitError,
    ServerError,
)
from chatclient.events import ModelEvent, TextDelta
from chatclient.messages import AssistantMessage, ToolResponseMessage
from chatclient.model import ChatModel
from chatclient.observation import ChatObserver, FallbackInfo
from chatclient.responses import ChatResponse, ChatResponseMetadata
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from providers.anthropic import AnthropicChatModel
from providers.fallback import FALLBACK_MODEL_KEY, FALLBACK_POSITION_KEY, FallbackChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel
from providers.shell import RetryPolicy
from tests.providers.model_events import assemble

PROVIDER_DOWN = [
    RateLimitError("slow down", provider="p", status=429),
    ServerError("boom", provider="p", status=500),
    OverloadedError("overloaded", provider="p", status=529),
    APIConnectionError("refused", provider="p"),
    APITimeoutError("timed out", provider="p"),
    DeadlineExceeded("deadline", provider="p", error_type="deadline_exceeded"),
]
REQUEST_WRONG = [
    BadRequestError("bad", provider="p", status=400),
    ContextLengthExceededError("too long", provider="p", status=400),
    AuthenticationError("key", provider="p", status=401),
]


class Recorder(ChatObserver):
    def __init__(self) -> None:
        self.fallbacks: list[FallbackInfo] = []

    def fallback(self, info: FallbackInfo) -> None:
        self.fallbacks.append(info)


@pytest.mark.parametrize("error", PROVIDER_DOWN, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("mode", MODES)
def test_a_provider_failure_goes_to_the_next_model_and_the_reply_says_which_answered(
    mode: str, error: Exception
) -> None:
    primary = ScriptedChatModel([error], model="primary")
    second = ScriptedChatModel([ServerError("also down", provider="q")], model="second")
    third = ScriptedChatModel(["from the third"], model="third")
    seen = Recorder()
    client = ChatClient.builder(FallbackChatModel(primary, second, third)).observers(seen).build()
    response, _ = run_spec(mode, client.prompt("hi"))
    assert response.chat_response is not None
    assert response.chat_response.text == "from the third"
    extra = response.chat_response.metadata.extra
    assert extra[FALLBACK_MODEL_KEY] == "ScriptedChatModel" and extra[FALLBACK_POSITION_KEY] == 2
    first = seen.fallbacks[0]
    assert (first.failed, first.next, first.position, first.error) == (primary, second, 1, error)
    assert [f.next for f in seen.fallbacks] == [second, third]
    assert (primary.calls, second.calls, third.calls) == (1, 1, 1)


@pytest.mark.parametrize("error", REQUEST_WRONG, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("mode", MODES)
def test_a_bad_request_is_raised_and_never_sent_to_another_model(mode: str, error: Exception) -> None:
    secondary = ScriptedChatModel(["never"])
    client = ChatClient.create(FallbackChatModel(ScriptedChatModel([error]), secondary))
    with pytest.raises(type(error)):
        run_spec(mode, client.prompt("hi"))
    assert secondary.calls == 0


@pytest.mark.parametrize("mode", MODES)
def test_the_last_models_failure_is_raised(mode: str) -> None:
    client = ChatClient.create(
        FallbackChatModel(ScriptedChatModel([RateLimitError("a")]), ScriptedChatModel([ServerError("b")]))
    )
    with pytest.raises(ServerError, match="b"):
        run_spec(mode, client.prompt("hi"))


def test_on_takes_error_types_or_a_predicate() -> None:
    only_limits = FallbackChatModel(
        ScriptedChatModel([ServerError("down")]), ScriptedChatModel(["x"]), on=(RateLimitError,)
    )
    with pytest.raises(ServerError):
        only_limits.call(Prompt("hi"))
    everything = FallbackChatModel(
        ScriptedChatModel([BadRequestError("odd")]), ScriptedChatModel(["x"]), on=lambda e: True
    )
    assert everything.call(Prompt("hi")).text == "x"
    with pytest.raises(ConfigurationError):
        FallbackChatModel(ScriptedChatModel(["x"]), "openai:gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        FallbackChatModel(ScriptedChatModel(["x"]), on="everything")  # type: ignore[arg-type]


# ------------------------------------------------------------------ streams: only before the first delta


def _responses_stream(*events: dict[str, Any]) -> httpx2.Response:
    content = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content.encode())


CREATED = {"type": "response.created", "response": {"id": "resp_primary", "model": "gpt-5", "output": []}}
FAILED = {"type": "error", "code": "server_error", "message": "The server had an error"}


def _responses_model(reply: httpx2.Response) -> OpenAIResponsesChatModel:
    transport = httpx2.MockTransport(lambda request: reply)
    return OpenAIResponsesChatModel("gpt-5", api_key="k", http_client=httpx2.Client(transport=transport),
                                    async_http_client=httpx2.AsyncClient(transport=transport))  # fmt: skip


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_stream_that_fails_before_its_first_delta_falls_back_and_keeps_nothing_of_the_first(mode: str) -> None:
    """The primary's stream opens and names its response, then fails: the caller's reply is the
    secondary's alone, its id included."""
    primary = _responses_model(_responses_stream(CREATED, FAILED))
    secondary = ScriptedChatModel(["from the secondary"], model="secondary")
    response, events = run_spec(mode, ChatClient.create(FallbackChatModel(primary, secondary)).prompt("hi"))
    assert response.chat_response is not None and response.chat_response.text == "from the secondary"
    assert response.chat_response.metadata.id != "resp_primary"
    assert response.chat_response.metadata.extra[FALLBACK_POSITION_KEY] == 1
    assert "resp_primary" not in repr(events)


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_stream_that_fails_after_a_delta_reached_the_caller_is_not_replaced(mode: str) -> None:
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Hel"}
    primary = _responses_model(_responses_stream(CREATED, delta, FAILED))
    secondary = ScriptedChatModel(["never"])
    with pytest.raises(ServerError):
        run_spec(mode, ChatClient.create(FallbackChatModel(primary, secondary)).prompt("hi"))
    assert secondary.calls == 0


class CutAfterDelta(ChatModel):
    """Streams one text delta, then fails like a dropped connection."""

    def call(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("only streamed here")

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        yield ChatResponse((), ChatResponseMetadata(id="cut"))
        yield TextDelta("Hel")
        raise APIConnectionError("connection reset", provider="cut")


def test_the_model_events_of_a_stream_cut_after_a_delta_end_with_its_error() -> None:
    model = FallbackChatModel(CutAfterDelta(), ScriptedChatModel(["never"]))
    received: list[ModelEvent] = []
    with pytest.raises(APIConnectionError):
        for event in model.stream(Prompt("hi")):
            received.append(event)
    assert [type(e).__name__ for e in received] == ["ChatResponse", "TextDelta"]


def test_a_streamed_reply_is_the_same_reply_as_a_call() -> None:
    def make() -> FallbackChatModel:
        return FallbackChatModel(ScriptedChatModel([RateLimitError("a")]), ScriptedChatModel(["the answer"]))

    streamed = assemble(list(make().stream(Prompt("hi"))))
    called = make().call(Prompt("hi"))
    assert streamed.text == called.text == "the answer"
    assert streamed.metadata.extra == called.metadata.extra


# ------------------------------------------------------------------ the tool loop and confirmation across a fallback


class Booking:
    def __init__(self) -> None:
        self.booked: list[str] = []

    @tool(description="Book a flight", requires_confirmation=True)
    def book(self, flight: str) -> str:
        self.booked.append(flight)
        return f"booked {flight}"


ARGS = '{"flight": "VX205"}'


def _anthropic_tool_use(stream: bool) -> httpx2.Response:
    use = {"type": "tool_use", "id": "toolu_01", "name": "book", "input": {"flight": "VX205"}}
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x"}
    if not stream:
        body = {
            **message,
            "content": [use],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 3},
        }
        return httpx2.Response(200, json=body)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": [], "usage": {"input_tokens": 5}}},
        {"type": "content_block_start", "index": 0, "content_block": {**use, "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ARGS}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]  # fmt: skip
    content = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content.encode())


def _openai_answer(stream: bool) -> httpx2.Response:
    if not stream:
        body = {"id": "c2", "model": "gpt-4o", "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Booked VX205."}}]}  # fmt: skip
        return httpx2.Response(200, json=body)
    chunks = [
        {"id": "c2", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "Booked VX205."}}]},
        {"id": "c2", "model": "gpt-4o", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]  # fmt: skip
    content = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=content.encode())


class Wire:
    """Answers with each reply in turn; keeps each request's JSON."""

    def __init__(self, *replies: httpx2.Response) -> None:
        self.replies = list(replies)
        self.bodies: list[Any] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        return self.replies.pop(0)

    def clients(self) -> dict[str, Any]:
        transport = httpx2.MockTransport(self)
        return {
            "http_client": httpx2.Client(transport=transport),
            "async_http_client": httpx2.AsyncClient(transport=transport),
        }


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_paused_on_the_fallback_model_resumes_on_the_primary_once_it_is_back(mode: str) -> None:
    """OpenAI is down, Claude asks to book (a call that needs confirmation), the turn pauses; on
    resume OpenAI is back and gets Claude's tool call and the tool's result as its own history."""
    stream = "stream" in mode
    busy = httpx2.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}})
    openai_wire = Wire(busy, _openai_answer(stream))
    claude_wire = Wire(_anthropic_tool_use(stream))
    no_retry = RetryPolicy(max_retries=0)
    primary = OpenAIChatModel("gpt-4o", api_key="k", retry=no_retry, **openai_wire.clients())
    secondary = AnthropicChatModel("claude-x", api_key="k", retry=no_retry, **claude_wire.clients())
    tools = Booking()
    client = ChatClient.builder(FallbackChatModel(primary, secondary)).default_tools(tools).build()

    paused, _ = run_spec(mode, client.prompt("Book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None and [c.name for c in pending.calls] == ["book"]
    assert paused.chat_response is not None
    assert paused.chat_response.metadata.extra[FALLBACK_MODEL_KEY] == "AnthropicChatModel(claude-x)"
    assert tools.booked == []

    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    assert resumed.chat_response is not None and resumed.chat_response.text == "Booked VX205."
    assert resumed.chat_response.metadata.extra[FALLBACK_MODEL_KEY] == "OpenAIChatModel(gpt-4o)"
    assert tools.booked == ["VX205"]
    assert openai_wire.bodies[1]["model"] == "gpt-4o" and claude_wire.bodies[0]["model"] == "claude-x"
    history = openai_wire.bodies[1]["messages"]
    called = history[-2]["tool_calls"][0]["function"]
    assert called["name"] == "book" and json.loads(called["arguments"]) == {"flight": "VX205"}
    assert history[-1] == {
        "role": "tool",
        "tool_call_id": history[-2]["tool_calls"][0]["id"],
        "content": "booked VX205",
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_paused_on_the_primary_resumes_on_the_fallback_when_the_primary_goes_down(mode: str) -> None:
    primary = ScriptedChatModel([_scripted_booking(), RateLimitError("quota", provider="p")])
    secondary = ScriptedChatModel(["Booked it."])
    tools = Booking()
    client = ChatClient.builder(FallbackChatModel(primary, secondary)).default_tools(tools).build()
    paused, _ = run_spec(mode, client.prompt("Book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    assert resumed.chat_response is not None and resumed.chat_response.text == "Booked it."
    assert tools.booked == ["VX205"]
    *_, asked, answered = secondary.prompts[0].messages
    assert isinstance(asked, AssistantMessage) and isinstance(answered, ToolResponseMessage)
    assert asked.tool_calls[0].name == "book" and answered.responses[0].response_data == "booked VX205"


def _scripted_booking() -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"})])


# ------------------------------------------------------------------ what it is built from


def test_the_fallback_module_imports_no_vendor() -> None:
    source = (Path(__file__).resolve().parents[2] / "providers" / "fallback.py").read_text()
    imported = {node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)} | {
        alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import) for alias in node.names
    }
    assert all(name.startswith(("chatclient", "collections", "typing", "__future__")) for name in imported), imported


def test_each_model_keeps_its_own_default_options() -> None:
    """The chain has no defaults of its own: each model sends its own model name, not the primary's."""
    first = ScriptedChatModel([RateLimitError("a")], default_options=None)
    model = FallbackChatModel(first, ScriptedChatModel(["x"]))
    assert model.default_options is None
    assert repr(model) == "FallbackChatModel(ScriptedChatModel, ScriptedChatModel)"


class Closable(ScriptedChatModel):
    def __init__(self) -> None:
        super().__init__(["x"])
        self.closed: list[str] = []

    def close(self) -> None:
        self.closed.append("close")

    async def aclose(self) -> None:
        self.closed.append("aclose")


def test_closing_the_chain_closes_every_model_sync_and_async() -> None:
    import asyncio

    first, second = Closable(), Closable()
    with FallbackChatModel(first, second, ScriptedChatModel(["no close"])):
        pass
    assert first.closed == second.closed == ["close"]

    async def run() -> None:
        async with FallbackChatModel(first, second):
            pass

    asyncio.run(run())
    assert first.closed == second.closed == ["close", "aclose"]


def test_a_model_whose_stream_fails_as_it_is_opened_falls_back() -> None:
    class FailsAtOnce(ChatModel):
        def call(self, prompt: Prompt) -> ChatResponse:
            raise ServerError("down")

        def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:  # not a generator: raises when called
            raise ServerError("down")

    reply = assemble(list(FallbackChatModel(FailsAtOnce(), ScriptedChatModel(["up"])).stream(Prompt("hi"))))
    assert reply.text == "up"
