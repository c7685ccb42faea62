"""Issue 16: a local OpenAI-compatible server (llama.cpp's behaviour) through ``ChatClient`` with a tool.

The server (``local_server``) runs on 127.0.0.1 and rejects an assistant tool-call message whose
``content`` is not a string: with a 500 chat-template error, or, when streaming, with a 200 stream
that ends without an event. Every mode must complete both rounds, run the tool exactly once, and
never take an empty stream for an answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatResponse,
    Prompt,
    ToolCall,
    UserMessage,
    tool,
)
from chatclient.errors import ServerError, StreamIncompleteError
from chatclient.testing.advisor_kit import run_spec
from providers._retry import RetryPolicy
from providers.openai import OpenAIChatModel, OpenAIChatOptions
from providers.openai._mapping import build_request

from .local_server import ANSWER, local_server

MODES = ["call", "stream", "acall", "astream"]


def weather_client(base_url: str, calls: list[str], **options: Any) -> ChatClient:
    @tool(description="Get the weather of a city")
    def get_weather(city: str) -> str:
        calls.append(city)
        return f"Sunny in {city}"

    model = OpenAIChatModel(
        "local",
        base_url=base_url,
        options=OpenAIChatOptions(**options),
        retry=RetryPolicy(max_retries=2, initial_backoff=0),
    )
    return ChatClient.builder(model).default_tools(get_weather).build()


def run(client: ChatClient, mode: str) -> ChatResponse:
    """The final reply of the turn (tool rounds included) in one of the four modes."""
    response = run_spec(mode, client.prompt("What's the weather in Paris?"))[0].chat_response
    assert response is not None
    return response


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_round_trip_against_a_llama_cpp_like_server(mode: str) -> None:
    calls: list[str] = []
    with local_server() as server:
        response = run(weather_client(server.base_url, calls), mode)
    assert response.text == ANSWER
    assert calls == ["Paris"], "the tool ran exactly once"
    assert len(server.requests) == 2, "one request per round, nothing retried"
    echoed = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert echoed["content"] == "" and echoed["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("form", ["null", "omit"])
def test_a_rejected_content_form_fails_once_and_loudly(mode: str, form: str) -> None:
    """With the option set to a form this server rejects: the 500 template error is not retried,
    and the empty 200 stream is an error, not an empty answer; the tool of round one ran once."""
    calls: list[str] = []
    expected = StreamIncompleteError if "stream" in mode else ServerError
    with local_server() as server, pytest.raises(expected) as raised:
        run(weather_client(server.base_url, calls, tool_call_content=form), mode)
    assert calls == ["Paris"]
    assert len(server.requests) == 2, "the deterministic failure was sent once"
    echoed = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert ("content" in echoed) == (form == "null") and echoed.get("content") is None
    if expected is ServerError:
        assert raised.value.status == 500 and raised.value.retryable is False


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_an_empty_200_stream_raises_and_no_tool_runs(mode: str) -> None:
    calls: list[str] = []
    with local_server(empty_streams=True) as server, pytest.raises(StreamIncompleteError, match="without a single"):
        run(weather_client(server.base_url, calls), mode)
    assert calls == [], "no tool runs on a reply that never came"
    assert len(server.requests) == 1, "a stream that was opened is never retried"


# ---------------------------------------------------------------------- the rules, one by one


@pytest.mark.parametrize(("form", "expected"), [("empty", {"content": ""}), ("null", {"content": None}), ("omit", {})])
def test_the_content_form_of_a_text_less_tool_call_message(form: str, expected: dict[str, Any]) -> None:
    calls = (ToolCall(id="c1", name="now", arguments="{}"),)
    options = OpenAIChatOptions(model="m", tool_call_content=form)  # type: ignore[arg-type]
    prompt = Prompt([UserMessage("time?"), AssistantMessage(None, tool_calls=calls), AssistantMessage("noon")], options)
    tool_message, text_message = build_request(prompt, options, stream=False)["messages"][1:]
    assert {k: v for k, v in tool_message.items() if k == "content"} == expected
    assert text_message == {"role": "assistant", "content": "noon"}, "messages without calls are untouched"
    with_text = Prompt([AssistantMessage("Checking.", tool_calls=calls)], options)
    assert build_request(with_text, options, stream=False)["messages"][0]["content"] == "Checking."
