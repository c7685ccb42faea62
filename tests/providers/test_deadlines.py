"""A caller's time limit holds across retries: the model's ``RetryPolicy.deadline`` and a request's
``timeout`` (``spec.timeout(...)``), in all four modes and on every provider.

Proved with the server's own view (:mod:`tests.providers.stalling_server`): how many attempts
reached it and that the last one was abandoned by the client, never answered. No test measures
time; each server stall is bounded so nothing can hang.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import APITimeoutError, ServerError
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.testing import MODES
from chatclient.testing.advisor_kit import run_spec
from providers._deadline import DEADLINE_EXCEEDED
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .stalling_server import StallingServer, stalling_server

ModelFactory = Callable[..., AnthropicChatModel | OllamaChatModel | OpenAIChatModel | OpenAIResponsesChatModel]

PROVIDERS: dict[str, ModelFactory] = {
    "openai": lambda base_url, **kw: OpenAIChatModel(base_url=base_url, api_key="k", **kw),
    "responses": lambda base_url, **kw: OpenAIResponsesChatModel(base_url=base_url, api_key="k", **kw),
    "anthropic": lambda base_url, **kw: AnthropicChatModel("claude-test", base_url=base_url, api_key="k", **kw),
    "ollama": lambda base_url, **kw: OllamaChatModel("llama3", base_url=base_url, **kw),
}


@pytest.fixture
def server() -> Iterator[StallingServer]:
    with stalling_server() as running:
        yield running


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("mode", MODES)
def test_a_request_timeout_bounds_the_round_in_every_mode(server: StallingServer, provider: str, mode: str) -> None:
    """The model waits 600 s per attempt and would retry twice; the request allows 1 s in all (not
    less: building the client and the request on a loaded machine must not spend the deadline)."""
    model = PROVIDERS[provider](f"{server.url}/stall", timeout=600.0, retry=RetryPolicy(initial_backoff=0))
    with model:
        spec = ChatClient.create(model).prompt("hi").timeout(1.0)
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, spec)
    assert "deadline of 1 s" in raised.value.message and "after 1 attempt " in raised.value.message
    assert raised.value.error_type == DEADLINE_EXCEEDED and not raised.value.retryable
    attempts = server.settled()
    assert len(attempts) == 1, "no retry starts once the deadline is spent"
    assert attempts[0].abandoned and not attempts[0].answered, "the caller hung up on the stalled attempt"


def test_a_policy_deadline_stops_retrying_a_stalled_server(server: StallingServer) -> None:
    """An ``httpx2.Timeout`` stays the per-attempt limit; the deadline is the total across the attempts."""
    policy = RetryPolicy(max_retries=10, initial_backoff=0, deadline=1.0)
    per_attempt = httpx2.Timeout(0.3)
    with (
        OpenAIChatModel(base_url=f"{server.url}/stall", api_key="k", timeout=per_attempt, retry=policy) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        model.call(Prompt("hi"))
    attempts = server.settled()
    assert 2 <= len(attempts) <= 4, "attempts of 0.3 s within 1 s, not the policy's eleven"
    assert f"after {len(attempts)} attempts" in raised.value.message
    assert all(a.abandoned and not a.answered for a in attempts)


def test_without_a_deadline_every_attempt_runs_its_full_timeout(server: StallingServer) -> None:
    """An ``httpx2.Timeout`` is the explicit opt-in for per-attempt limits only: with no deadline set,
    retries multiply the caller's wait (each of the three attempts runs its full timeout)."""
    with (
        OpenAIChatModel(
            base_url=f"{server.url}/stall",
            api_key="k",
            timeout=httpx2.Timeout(0.2),
            retry=RetryPolicy(initial_backoff=0),
        ) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        model.call(Prompt("hi"))
    assert "deadline" not in raised.value.message
    assert len(server.settled()) == 3


def test_a_numeric_model_timeout_is_the_deadline_of_the_whole_request(server: StallingServer) -> None:
    """Issue 9's repro, word for word: ``timeout=2`` against a stalled server was three attempts of
    2 s each. A number is now the limit of the whole request: one attempt, abandoned at 2 s."""
    with (
        OpenAIChatModel("m", api_key="k", base_url=f"{server.url}/stall/v1", timeout=2) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        ChatClient.create(model).prompt("hi").call().content()
    assert raised.value.error_type == DEADLINE_EXCEEDED and not raised.value.retryable
    assert "deadline of 2 s was reached after 1 attempt " in raised.value.message
    (attempt,) = server.settled()
    assert attempt.abandoned and not attempt.answered


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("mode", MODES)
def test_a_numeric_model_timeout_bounds_every_provider_in_every_mode(
    server: StallingServer, provider: str, mode: str
) -> None:
    """The policy would retry twice with no pause; the model's 0.8 s is the total."""
    model = PROVIDERS[provider](f"{server.url}/stall", timeout=0.8, retry=RetryPolicy(initial_backoff=0))
    with model, pytest.raises(APITimeoutError) as raised:
        run_spec(mode, ChatClient.create(model).prompt("hi"))
    assert raised.value.error_type == DEADLINE_EXCEEDED
    assert "deadline of 0.8 s" in raised.value.message and "after 1 attempt " in raised.value.message
    assert len(server.settled()) == 1


@pytest.mark.parametrize(
    ("model_timeout", "policy_deadline", "request_timeout", "applies"),
    [(0.2, 30.0, None, "0.2"), (30.0, 0.2, None, "0.2"), (30.0, 30.0, 0.2, "0.2"), (0.2, None, 30.0, "0.2")],
)
def test_the_shortest_of_model_timeout_policy_deadline_and_request_timeout_applies(
    server: StallingServer,
    model_timeout: float,
    policy_deadline: float | None,
    request_timeout: float | None,
    applies: str,
) -> None:
    policy = RetryPolicy(initial_backoff=0, deadline=policy_deadline)
    with (
        OpenAIChatModel(base_url=f"{server.url}/stall", api_key="k", timeout=model_timeout, retry=policy) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        model.call(Prompt("hi", ChatOptions(timeout=request_timeout)))
    assert f"deadline of {applies} s was reached after 1 attempt " in raised.value.message
    assert len(server.settled()) == 1


def test_a_wait_that_would_end_past_the_deadline_is_not_taken(
    server: StallingServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 503 asking for 30 s against a 5 s deadline: raised at once, the wait never begins."""
    caplog.set_level(logging.INFO, logger="chatclient.providers")
    policy = RetryPolicy(deadline=5.0)
    with (
        OpenAIChatModel(base_url=f"{server.url}/slow503", api_key="k", retry=policy) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        model.call(Prompt("hi"))
    assert "deadline of 5 s" in raised.value.message and "after 1 attempt " in raised.value.message
    assert "retry in 30.00 s would end past it" in raised.value.message
    assert isinstance(raised.value.__cause__, ServerError)
    assert len(server.settled()) == 1
    assert any("deadline of 5 s" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)


@pytest.mark.parametrize("mode", MODES)
def test_retries_are_logged_and_the_last_attempt_is_cut(
    server: StallingServer, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """A 503, a logged retry, then a stall cut short by the request's timeout."""
    caplog.set_level(logging.INFO, logger="chatclient.providers")
    model = OpenAIChatModel(base_url=f"{server.url}/busy1", api_key="k", retry=RetryPolicy(initial_backoff=0))
    with model:
        spec = ChatClient.create(model).prompt("hi").options(ChatOptions(timeout=0.5))
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, spec)
    assert "after 2 attempts" in raised.value.message
    first, second = server.settled()
    assert first.answered and not first.abandoned
    assert second.abandoned and not second.answered
    messages = [r.getMessage() for r in caplog.records if r.name == "chatclient.providers"]
    assert any("retry 1 in 0.00 s" in m for m in messages)
    assert any("deadline of 0.5 s" in m for m in messages)


@pytest.mark.parametrize("scenario", ["trickle", "stallmid"])
@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_stream_is_bounded_while_it_is_read(server: StallingServer, scenario: str, mode: str) -> None:
    """A stream that keeps trickling (each read well within its timeout) or goes silent after its
    first delta is abandoned at the deadline, not read for ever."""
    with OpenAIChatModel(base_url=f"{server.url}/{scenario}", api_key="k") as model:
        spec = ChatClient.create(model).prompt("hi").timeout(1.0)
        with pytest.raises(APITimeoutError) as raised:
            run_spec(mode, spec)
    assert "deadline of 1 s" in raised.value.message
    assert "after 1 attempt " in raised.value.message
    (attempt,) = server.settled()
    assert attempt.abandoned, "the client hung up on the stream"


def test_the_shorter_of_the_policy_and_the_request_applies(server: StallingServer) -> None:
    policy = RetryPolicy(deadline=0.3)
    with (
        OpenAIChatModel(base_url=f"{server.url}/stall", api_key="k", retry=policy) as model,
        pytest.raises(APITimeoutError) as raised,
    ):
        model.call(Prompt("hi", ChatOptions(timeout=30)))
    assert "deadline of 0.3 s" in raised.value.message
    assert len(server.settled()) == 1


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ChatOptions(timeout=0)


def test_a_model_timeout_may_be_an_httpx2_timeout(server: StallingServer) -> None:
    """Per-part timeouts stay the per-attempt limits; the deadline cuts each of them to what is left."""
    per_attempt = httpx2.Timeout(600.0, connect=5.0)
    policy = RetryPolicy(initial_backoff=0, deadline=0.3)
    model = OpenAIChatModel(base_url=f"{server.url}/stall", api_key="k", timeout=per_attempt, retry=policy)
    with model, pytest.raises(APITimeoutError) as raised:
        model.call(Prompt("hi"))
    assert "deadline of 0.3 s was reached after 1 attempt " in raised.value.message
    (attempt,) = server.settled()
    assert attempt.abandoned


def test_a_first_attempt_within_the_deadline_keeps_its_own_timeouts_and_a_retry_is_cut() -> None:
    # A numeric timeout is the deadline; the first attempt's own timeouts already end within it, so
    # nothing is cut (the common case pays for no cut). The retry gets what is left, below its own.
    seen: list[dict[str, float]] = []
    choice = b'{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}'
    body = b'{"id":"c","model":"m","choices":[' + choice + b"]}"

    def reply(request: httpx2.Request) -> httpx2.Response:
        seen.append(dict(request.extensions["timeout"]))
        if len(seen) == 1:
            return httpx2.Response(503, headers={"retry-after": "0"}, content=b"{}")
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    client = httpx2.Client(transport=httpx2.MockTransport(reply), timeout=30)
    model = OpenAIChatModel("m", api_key="k", http_client=client, timeout=30)
    assert model.call(Prompt("hi")).result is not None
    assert seen[0] == {"connect": 30, "read": 30, "write": 30, "pool": 30}
    assert len(seen) == 2 and all(0 < value < 30 for value in seen[1].values())


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_sync_reply_whose_body_was_there_already_leaves_nothing_watched(provider: str) -> None:
    """An in-process transport hands back a body already read, which httpx2 never reads through the
    deadline's stream: the exchange is released all the same, not kept by the watchdog until its
    deadline (which would keep every such reply, and its request, alive until then)."""
    from providers._watchdog import WATCHDOG

    said = {"role": "assistant", "content": "hi"}
    replies = {
        "openai": {"choices": [{"index": 0, "message": said, "finish_reason": "stop"}]},
        "responses": {"output": [{"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "hi"}]}], "status": "completed"},
        "anthropic": {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "role": "assistant"},
        "ollama": {"message": said, "done": True},
    }  # fmt: skip
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=replies[provider])))
    model = PROVIDERS[provider]("http://t.example/v1", http_client=client, timeout=60)
    before = len(WATCHDOG._watched)
    for _ in range(3):
        assert ChatClient.create(model).prompt("hi").call().content() == "hi"
    assert len(WATCHDOG._watched) == before
