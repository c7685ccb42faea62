"""Metrics with the conventions' buckets; content capture off by default, on in code or from the
environment; nothing built when nothing records; ``import chatclient`` never loads opentelemetry."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.responses import Usage
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tracing import OpenTelemetryObserver, _content
from chatclient.tracing import _names as names

from .conftest import Otel

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


class Tools:
    @tool(description="Get the weather of a city")
    def weather(self, city: str) -> str:
        return f"Sunny in {city}"


def _tool_turn(observer: OpenTelemetryObserver, mode: str) -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="c1")]), "Sunny."],
        usage=Usage(prompt_tokens=10, completion_tokens=3),
    )
    client = ChatClient.builder(model).default_tools(Tools()).observers(observer).build()
    response, _ = run_spec(mode, client.prompt().system("Be brief.").user("Weather in Oslo?"))
    assert response.text == "Sunny."


def _attrs(span: Any) -> dict[str, Any]:
    found: dict[str, Any] = dict(span.attributes or {})
    return found


@pytest.mark.parametrize("mode", MODES)
def test_metrics_of_a_tool_turn_with_the_conventions_buckets(otel: Otel, mode: str) -> None:
    _tool_turn(otel.observer(), mode)
    metrics = otel.metrics()
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "unknown", "gen_ai.response.model": "scripted"}

    [duration] = metrics["gen_ai.client.operation.duration"]
    assert (dict(duration.attributes), duration.count) == (chat, 2)
    assert tuple(duration.explicit_bounds) == names.DURATION_BUCKETS

    tokens = metrics["gen_ai.client.token.usage"]
    assert {(p.attributes["gen_ai.token.type"], p.count, p.sum) for p in tokens} == {("input", 2, 20), ("output", 2, 6)}
    assert tuple(tokens[0].explicit_bounds) == tuple(float(b) for b in names.TOKEN_BUCKETS)

    if mode in ("stream", "astream"):
        [first] = metrics["gen_ai.client.operation.time_to_first_chunk"]
        assert first.count == 2 and tuple(first.explicit_bounds) == names.DURATION_BUCKETS
    else:
        assert "gen_ai.client.operation.time_to_first_chunk" not in metrics

    [agent] = metrics["gen_ai.invoke_agent.duration"]
    assert agent.count == 1 and tuple(agent.explicit_bounds) == names.AGENT_DURATION_BUCKETS
    [inference] = metrics["gen_ai.invoke_agent.inference_calls"]
    [tools] = metrics["gen_ai.invoke_agent.tool_calls"]
    assert (inference.sum, tools.sum) == (2, 1)
    assert tuple(tools.explicit_bounds) == tuple(float(b) for b in names.COUNT_BUCKETS)

    [tool_duration] = metrics["gen_ai.execute_tool.duration"]
    assert dict(tool_duration.attributes) == {"gen_ai.tool.name": "weather", "gen_ai.tool.type": "function"}
    assert tool_duration.count == 1


def test_a_failed_model_call_is_measured_with_its_error_type(otel: Otel) -> None:
    client = ChatClient.builder(ScriptedChatModel([ValueError("boom")])).observers(otel.observer()).build()
    with pytest.raises(ValueError):
        client.prompt("hi").call().content()
    [duration] = otel.metrics()["gen_ai.client.operation.duration"]
    assert duration.attributes["error.type"] == "ValueError"
    [agent] = otel.metrics()["gen_ai.invoke_agent.duration"]
    assert agent.attributes["error.type"] == "ValueError"
    [chat] = [s for s in otel.spans() if s.name == "chat"]
    assert chat.status.status_code.name == "ERROR" and chat.status.description is None


def _content_attributes(otel: Otel) -> dict[str, dict[str, Any]]:
    return {s.name: {k: v for k, v in (s.attributes or {}).items() if k in CONTENT_KEYS} for s in otel.spans()}


@pytest.mark.parametrize("mode", MODES)
def test_no_content_by_default(otel: Otel, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.CAPTURE_ENV, raising=False)
    _tool_turn(otel.observer(), mode)
    assert all(not found for found in _content_attributes(otel).values())


@pytest.mark.parametrize("mode", MODES)
def test_content_on_in_code_as_the_conventions_json(otel: Otel, mode: str) -> None:
    _tool_turn(otel.observer(capture_content=True), mode)
    chats = [s for s in otel.spans() if s.name == "chat"]
    first, second = (_attrs(s) for s in chats)
    system = {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}
    call = {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}}
    assert json.loads(first["gen_ai.input.messages"]) == [system, user]
    assert json.loads(first["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [call], "finish_reason": "tool_call"}
    ]
    assert json.loads(first["gen_ai.tool.definitions"]) == [{"type": "function", "name": "weather"}]
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "Sunny in Oslo"}]}
    assert json.loads(second["gen_ai.input.messages"]) == [system, user, {"role": "assistant", "parts": [call]}, result]
    assert json.loads(second["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}], "finish_reason": "stop"}
    ]
    [tool_span] = [_attrs(s) for s in otel.spans() if s.name == "execute_tool weather"]
    assert json.loads(tool_span["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert json.loads(tool_span["gen_ai.tool.call.result"]) == "Sunny in Oslo"
    [root] = [_attrs(s) for s in otel.spans() if s.name == "invoke_agent"]
    assert json.loads(root["gen_ai.input.messages"]) == [system, user]


@pytest.mark.parametrize(("value", "captured"), [("SPAN_ONLY", True), ("span_and_event", True), ("NO_CONTENT", False)])
def test_content_from_the_environment(otel: Otel, monkeypatch: pytest.MonkeyPatch, value: str, captured: bool) -> None:
    monkeypatch.setenv(names.CAPTURE_ENV, value)
    _tool_turn(otel.observer(), "call")
    assert bool(_content_attributes(otel)["chat"]) is captured
    otel.exporter.clear()
    _tool_turn(otel.observer(capture_content=False), "call")  # code wins over the environment
    assert not _content_attributes(otel)["chat"]


def test_an_unknown_capture_value_means_no_content_and_one_warning(
    otel: Otel, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(names.CAPTURE_ENV, "everything")
    with caplog.at_level(logging.WARNING, logger="chatclient.tracing"):
        observer = otel.observer()
    assert observer.capture_content is False
    assert [r.getMessage() for r in caplog.records] == [
        f"{names.CAPTURE_ENV}='everything' is not one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT; "
        "content is not captured"
    ]


@pytest.mark.parametrize("mode", MODES)
def test_nothing_is_built_when_nothing_records(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sampler that records nothing (as with no SDK): no span is exported and no content is built,
    even with capture on: serialising would raise here, and the turn still succeeds."""

    def boom(*args: Any) -> str:
        raise AssertionError("content built for a span that does not record")

    monkeypatch.setattr(_content, "input_messages", boom)
    monkeypatch.setattr(_content, "to_json", boom)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tool_turn(OpenTelemetryObserver(tracer_provider=provider, capture_content=True), mode)
    _tool_turn(OpenTelemetryObserver(capture_content=True), mode)  # the global no-op provider
    assert exporter.get_finished_spans() == ()


def test_import_chatclient_never_loads_opentelemetry() -> None:
    code = (
        "import sys, chatclient, chatclient.tracing, chatclient.observation, providers.openai, advisors\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def _chunks_of(reply: str) -> int:
    from chatclient import UserMessage
    from chatclient.prompt import Prompt

    return len(list(ScriptedChatModel([reply]).stream(Prompt([UserMessage("Hi")]))))


@pytest.mark.parametrize("mode", MODES)
def test_time_per_output_chunk_is_opt_in_and_counts_every_chunk_after_the_first(otel: Otel, mode: str) -> None:
    for per_chunk in (False, True):
        observer = otel.observer(time_per_output_chunk=per_chunk)
        client = ChatClient.builder(ScriptedChatModel(["Hello there!"])).observers(observer).build()
        response, _ = run_spec(mode, client.prompt("Hi"))
        assert response.text == "Hello there!"
        metrics = otel.metrics()
        if not per_chunk or mode not in ("stream", "astream"):
            assert "gen_ai.client.operation.time_per_output_chunk" not in metrics
    [points] = metrics.get("gen_ai.client.operation.time_per_output_chunk", [None])
    if mode in ("stream", "astream"):
        assert points is not None and points.count == _chunks_of("Hello there!") - 1 > 1
        assert tuple(points.explicit_bounds) == names.DURATION_BUCKETS
        chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "unknown"}
        assert dict(points.attributes) == chat
    else:
        assert points is None
