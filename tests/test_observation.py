"""The instrumentation seam: every point is reported, in every mode, and nothing runs without observers."""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatClientResponse,
    ChatResponse,
    ToolCallDecision,
    ToolCallDecisions,
    awaiting_decision,
    tool,
)
from chatclient.observation import (
    CallInfo,
    ChatObserver,
    DecisionRecord,
    ModelCallInfo,
    Observers,
    RetryInfo,
    Watch,
    notify_retry,
    observing,
)
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec


class Log(ChatObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def call_started(self, info: CallInfo) -> Any:
        self.lines.append(f"call {info.mode}{' resumed' if info.resumed else ''}")
        return "call-token"

    def call_finished(self, token: Any, info: CallInfo, response: ChatClientResponse | None, error: Any) -> None:
        outcome = response.text if response is not None else repr(error)
        self.lines.append(f"call end {token} {outcome}")

    def model_started(self, info: ModelCallInfo) -> Any:
        self.lines.append(f"model {len(info.prompt.messages)} messages")
        return len(self.lines)

    def model_finished(self, token: Any, info: ModelCallInfo, response: ChatResponse | None, error: Any) -> None:
        self.lines.append(f"model end {type(token).__name__} {'error' if error else 'ok'}")

    def turn_paused(self, pending: Any) -> None:
        self.lines.append(f"paused {pending.awaiting_ids}")

    def decision_made(self, record: DecisionRecord) -> None:
        self.lines.append(f"decision {record.call_id} {record.outcome} by {record.approver_id}")

    def turn_resumed(self, pending: Any) -> None:
        self.lines.append("resumed")


class Broken(ChatObserver):
    def call_started(self, info: CallInfo) -> Any:
        raise RuntimeError("observer bug")


class Shop:
    def __init__(self) -> None:
        self.bought = 0

    @tool(requires_confirmation=True)
    def buy(self, item: str) -> str:
        """Buy an item."""
        self.bought += 1
        return f"bought {item}"


@pytest.mark.parametrize("mode", MODES)
def test_an_observer_sees_calls_model_rounds_the_pause_each_decision_and_the_resume(mode: str) -> None:
    log = Log()
    shop = Shop()
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("buy", {"item": "tea"}, id="b1")]), "Done."]
    )
    client = ChatClient.builder(model).default_tools(shop).observers(log, Broken()).build()
    paused, _ = run_spec(mode, client.prompt("Buy tea"))
    pending = awaiting_decision(paused)
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow("b1", approver="ana", reason="ok"))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    assert resumed.text == "Done." and shop.bought == 1
    assert log.lines == [
        f"call {mode}",
        "model 1 messages",
        "model end int ok",
        "paused ['b1']",
        "call end call-token None",
        f"call {mode} resumed",
        "resumed",
        "decision b1 allowed by ana",
        "model 3 messages",
        "model end int ok",
        "call end call-token Done.",
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_model_round_is_reported_with_its_error(mode: str) -> None:
    log = Log()
    client = ChatClient.builder(ScriptedChatModel([ValueError("boom")])).observers(log).build()
    with pytest.raises(ValueError, match="boom"):
        run_spec(mode, client.prompt("hi"))
    assert log.lines[-2] == "model end int error"
    assert log.lines[-1] == "call end call-token ValueError('boom')"


def test_retries_reach_the_observers_of_the_request_being_sent() -> None:
    seen: list[RetryInfo] = []

    class Retries(ChatObserver):
        def retry(self, info: RetryInfo) -> None:
            seen.append(info)

    notify_retry(1, RuntimeError("nobody listens"), 0.5)  # free and silent without observers
    with observing(Observers((Retries(),))):
        notify_retry(2, RuntimeError("429"), 1.5, provider="openai")
    assert [(r.attempt, r.wait, r.provider) for r in seen] == [(2, 1.5, "openai")]


def test_without_observers_the_plain_handlers_are_used() -> None:
    from chatclient._chain import compose_call

    model = ScriptedChatModel(["a"])
    plain = compose_call([], model)
    observed = compose_call([], model, Observers((Log(),)))
    assert plain.__name__ == "terminal" and observed.__name__ == "observed"


@pytest.mark.parametrize("mode", MODES)
def test_a_provider_retry_is_reported_to_the_observers_of_that_request(mode: str) -> None:
    import httpx2

    from providers._retry import RetryPolicy
    from providers.openai import OpenAIChatModel

    seen: list[RetryInfo] = []

    class Retries(ChatObserver):
        def retry(self, info: RetryInfo) -> None:
            seen.append(info)

    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}],
    }
    chunks = (
        'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
        '"delta":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    attempts: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        if len(attempts) == 1:
            return httpx2.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}})
        if b'"stream":true' in request.content:
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=chunks.encode())
        return httpx2.Response(200, json=reply)

    transport = httpx2.MockTransport(handler)
    model = OpenAIChatModel(
        "gpt-4o-mini",
        api_key="sk-test",
        http_client=httpx2.Client(transport=transport),
        async_http_client=httpx2.AsyncClient(transport=transport),
        retry=RetryPolicy(initial_backoff=0),
    )
    client = ChatClient.builder(model).observers(Retries()).build()
    response, _ = run_spec(mode, client.prompt("hi"))
    assert response.text == "Hi."
    assert [(r.attempt, r.provider) for r in seen] == [(1, "openai")]


@pytest.mark.parametrize("mode", MODES)
def test_each_tool_invocation_is_reported_with_its_outcome_and_duration(mode: str) -> None:
    from chatclient.observation import ToolInvocationInfo

    finished: list[tuple[str, str, Any, str | None, bool]] = []

    class Tools(ChatObserver):
        def tool_started(self, info: ToolInvocationInfo) -> Any:
            return f"span-{info.call.id}"

        def tool_finished(
            self, token: Any, info: ToolInvocationInfo, result: Any, error: BaseException | None, duration: float
        ) -> None:
            finished.append((token, info.name, result, type(error).__name__ if error else None, duration >= 0))

    @tool
    def ok(x: int) -> str:
        """Works."""
        return f"ok {x}"

    @tool
    async def broken(x: int) -> str:
        """Raises."""
        raise RuntimeError("tool bug")

    calls = [tool_call("ok", {"x": 1}, id="a"), tool_call("broken", {"x": 2}, id="b")]
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=calls), "Done."])
    client = ChatClient.builder(model).default_tools(ok, broken).observers(Tools()).build()
    response, _ = run_spec(mode, client.prompt("go"))
    assert response.text == "Done."
    assert sorted(finished) == [
        ("span-a", "ok", "ok 1", None, True),
        ("span-b", "broken", None, "ToolExecutionError", True),  # its __cause__ is the RuntimeError
    ]


def test_a_watch_finishes_once_with_its_result_or_the_error_that_ended_its_block() -> None:
    """The one copy of the start/finish bookkeeping: told once, however the work ends."""
    told: list[tuple[Any, ...]] = []

    def started(info: str) -> str:
        told.append(("started", info))
        return f"token-{info}"

    def finished(tokens: str, info: str, result: Any, error: BaseException | None) -> None:
        told.append(("finished", tokens, result, type(error).__name__ if error else None))

    with Watch(started, finished, "ok") as watch:
        watch.returns("answer")
    with pytest.raises(RuntimeError), Watch(started, finished, "bad") as watch:
        watch.returns("never reported")
        raise RuntimeError("boom")
    with Watch(started, finished, "early") as watch:  # a stream over for its reader at TurnFinished
        watch.returns("final")
        watch.finish()
        told.append(("still running",))
    assert told == [
        ("started", "ok"),
        ("finished", "token-ok", "answer", None),
        ("started", "bad"),
        ("finished", "token-bad", None, "RuntimeError"),
        ("started", "early"),
        ("finished", "token-early", "final", None),
        ("still running",),
    ]
