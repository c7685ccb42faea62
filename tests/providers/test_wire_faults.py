"""Faults on a real socket (:mod:`tests.providers.stalling_server`, ``127.0.0.1``, random port): a
connection reset before any byte and in the middle of a stream, 429 and 529 with ``retry-after``,
and a tool-call reply cut in the middle of its arguments, through the tool loop.

Every reply is a recorded one (``tests/fixtures/provider-traffic``). Proved with the server's record
of the attempts and what the retry observer was told, never with a clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chatclient import ChatClient, tool
from chatclient.errors import (
    APIConnectionError,
    MalformedResponseError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    StreamIncompleteError,
)
from chatclient.observation import ChatObserver, RetryInfo
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.openai import OpenAIChatModel

from .fixtures import interactions
from .stalling_server import Canned, StallingServer, stalling_server

NO_PAUSE = RetryPolicy(initial_backoff=0)


@pytest.fixture
def server() -> Iterator[StallingServer]:
    with stalling_server() as running:
        yield running


class Retries(ChatObserver):
    def __init__(self) -> None:
        self.seen: list[RetryInfo] = []

    def retry(self, info: RetryInfo) -> None:
        self.seen.append(info)


def _response(provider: str, name: str, index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = interactions(provider, name)[index]["response"]
    return found


def _json(provider: str, name: str, status: int | None = None, **headers: str) -> Canned:
    recorded = _response(provider, name)
    return Canned(
        status or recorded["status"],
        (("content-type", "application/json"), *headers.items()),
        json.dumps(recorded["body"]).encode(),
    )


def _sse(provider: str, name: str, how: Any = "send", events: int | None = None) -> Canned:
    """The recorded stream, whole, or its first ``events`` events only."""
    body = _response(provider, name)["sse"].encode()
    if events is not None:
        body = b"".join(event + b"\n\n" for event in body.split(b"\n\n")[:events])
    return Canned(200, (("content-type", "text/event-stream"),), body, how)


def _chat_ok(mode: str) -> Canned:
    """OpenAI's recorded plain answer, streamed or whole as the mode asks."""
    return _sse("openai-chat", "d_stream_text_with_usage") if "stream" in mode else _json("openai-chat", "a_plain_text")


def _recorded_answer(mode: str) -> str:
    if "stream" not in mode:
        text: str = _response("openai-chat", "a_plain_text")["body"]["choices"][0]["message"]["content"]
        return text
    events = _response("openai-chat", "d_stream_text_with_usage")["sse"].split("\n\n")
    chunks = [json.loads(e[len("data: ") :]) for e in events if e.startswith("data: {")]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


# ---------------------------------------------------------------------- connection resets


@pytest.mark.parametrize("mode", MODES)
def test_a_reset_before_any_byte_is_retried(server: StallingServer, mode: str) -> None:
    """Nothing reached the caller: the reset is a connection error, retried, and the retry answers."""
    url = server.script(f"reset-{mode}", Canned(how="reset"), _chat_ok(mode))
    retries = Retries()
    with OpenAIChatModel("m", api_key="k", base_url=url, retry=NO_PAUSE) as model:
        response, _ = run_spec(mode, ChatClient.create(model).prompt("hi").observers(retries))
    assert response.chat_response is not None and response.chat_response.text == _recorded_answer(mode)
    first, second = server.settled()
    assert not first.answered and second.answered
    (retry,) = retries.seen
    assert retry.attempt == 1 and isinstance(retry.error, APIConnectionError) and retry.error.retryable


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_reset_in_the_middle_of_a_stream_fails_after_one_attempt(server: StallingServer, mode: str) -> None:
    """The first events were handed to the caller: the reset is raised, never retried."""
    url = server.script(
        f"resetmid-{mode}", _sse("openai-chat", "d_stream_text_with_usage", "reset-mid", events=2), _chat_ok(mode)
    )
    retries = Retries()
    with (
        OpenAIChatModel("m", api_key="k", base_url=url, retry=NO_PAUSE) as model,
        pytest.raises(APIConnectionError) as raised,
    ):
        run_spec(mode, ChatClient.create(model).prompt("hi").observers(retries))
    assert "Connection failed" in raised.value.message
    assert len(server.settled()) == 1, "a stream is not retried once a byte of it was read"
    assert retries.seen == []


@pytest.mark.parametrize("mode", ["call", "acall"])
def test_a_reset_in_the_middle_of_a_whole_body_is_retried(server: StallingServer, mode: str) -> None:
    """A whole (not streamed) body cut by a reset reached no one: the request is sent again."""
    cut = _json("openai-chat", "a_plain_text")
    url = server.script(f"resetbody-{mode}", Canned(200, cut.headers, cut.body[:40], "reset-mid"), cut)
    with OpenAIChatModel("m", api_key="k", base_url=url, retry=NO_PAUSE) as model:
        response, _ = run_spec(mode, ChatClient.create(model).prompt("hi"))
    assert response.chat_response is not None and response.chat_response.text == _recorded_answer(mode)
    assert [a.answered for a in server.settled()] == [False, True]


# ---------------------------------------------------------------------- 429 and 529 with retry-after


@pytest.mark.parametrize(
    ("fixture", "status", "error"),
    [("f_error_429_rate_limit", 429, RateLimitError), ("f_error_529_overloaded", 529, OverloadedError)],
)
@pytest.mark.parametrize("mode", ["call", "astream"])
def test_a_busy_reply_is_retried_after_its_retry_after(
    server: StallingServer, fixture: str, status: int, error: type[ProviderError], mode: str
) -> None:
    """Anthropic's recorded 429 and 529 (``retry-after`` set to 1 s: the recording asked for 41 s on
    the 429 and nothing on the 529), then its recorded answer: one retry, after the header's wait,
    not the policy's backoff (10 s here)."""
    busy = _json("anthropic", fixture, status)
    busy = Canned(busy.status, (*_recorded_headers(fixture), ("retry-after", "1")), busy.body)
    answer = _sse("anthropic", "d_stream_text") if "stream" in mode else _json("anthropic", "a_plain_text")
    url = server.script(f"busy-{status}-{mode}", busy, answer)
    retries = Retries()
    policy = RetryPolicy(initial_backoff=10)
    with AnthropicChatModel("claude-x", api_key="k", base_url=url, retry=policy) as model:
        response, _ = run_spec(mode, ChatClient.create(model).prompt("hi").observers(retries))
    assert response.chat_response is not None and response.chat_response.text
    assert [a.answered for a in server.settled()] == [True, True], "two attempts, both answered"
    (retry,) = retries.seen
    assert isinstance(retry.error, error) and isinstance(retry.error, ProviderError)
    assert retry.error.status == status
    assert retry.error.retry_after == 1.0 and retry.wait == 1.0 and retry.provider == "anthropic"


def _recorded_headers(fixture: str) -> tuple[tuple[str, str], ...]:
    headers = _response("anthropic", fixture).get("headers") or {}
    return tuple((k, v) for k, v in headers.items() if k.lower() not in ("retry-after", "content-length"))


# ---------------------------------------------------------------------- a tool call cut mid-arguments


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_call_cut_in_its_arguments_never_runs_the_tool(server: StallingServer, mode: str) -> None:
    """Streamed: the recorded parallel tool-call stream closed after its first argument delta
    (``{"pa``) raises ``StreamIncompleteError``. Whole: the recorded tool-call reply closed inside
    its arguments (``{"city":"Tok``) is not JSON, a ``MalformedResponseError``. Either way, through
    the tool loop, in one attempt, and the tool never runs."""
    ran: list[str] = []

    @tool(description="Secret")
    def secret_retrieval_tool(password: str) -> str:
        ran.append(password)
        return "the secret"

    @tool(description="Temperature")
    def get_temperature(city: str) -> str:
        ran.append(city)
        return "20"

    if "stream" in mode:
        cut = _sse("openai-chat", "d_stream_parallel_tool_call_deltas", "cut", events=3)
        assert b'"arguments":"{\\"pa"' in cut.body and b'finish_reason":"tool_calls' not in cut.body
        expected: type[Exception] = StreamIncompleteError
    else:
        whole = _json("openai-chat", "b_single_tool_call_roundtrip")
        cut = Canned(200, whole.headers, whole.body[: whole.body.index(b"Tok") + 3], "cut")
        expected = MalformedResponseError
    url = server.script(f"cut-{mode}", cut)
    with OpenAIChatModel("m", api_key="k", base_url=url, retry=NO_PAUSE) as model:
        client = ChatClient.builder(model).default_tools(secret_retrieval_tool, get_temperature).build()
        with pytest.raises(expected):
            run_spec(mode, client.prompt("Use the tool"))
    assert ran == [], "no tool ran on truncated arguments"
    assert len(server.settled()) == 1
