"""Durable turns: a failure after tools ran is continued, never restarted (issue 31, items 1, 2, 3, 5)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.durable import UNKNOWN_OUTCOME_MESSAGE, JournalEntry, TurnContinuation, UsageLimits
from chatclient.errors import (
    ServerError,
    ToolCallDecisionError,
    TurnInProgressError,
    TurnInterruptedError,
    UsageLimitExceededError,
)
from chatclient.messages import Message, ToolResponseMessage
from chatclient.pending.state import InMemoryPendingToolCallStore
from chatclient.responses import Usage
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from tests.racing import race


class Booking:
    def __init__(self) -> None:
        self.booked: list[str] = []

    @tool(requires_confirmation=True)
    def book(self, hotel: str) -> str:
        """Book a hotel."""
        self.booked.append(hotel)
        return f"booked {hotel}"

    @tool
    def weather(self, city: str) -> str:
        """The weather."""
        self.booked.append(f"weather:{city}")
        return "sunny"


def _book_reply() -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call("book", {"hotel": "Ritz"}, id="b1")])


def _weather_reply() -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="w1")])


def _tool_texts(messages: Sequence[Message]) -> list[str]:
    return [r.response_data for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses]


@pytest.mark.parametrize("mode", MODES)
def test_an_ungated_turn_that_fails_after_its_tools_is_continued_without_running_them_again(mode: str) -> None:
    tools = Booking()
    model = ScriptedChatModel([_weather_reply(), ServerError("503 after retries"), "It is sunny in Oslo."])
    client = ChatClient.builder(model).build()
    with pytest.raises(ServerError) as raised:  # a chatclient error keeps its type
        run_spec(mode, client.prompt("Weather?").tools(tools))
    continuation = raised.value.continuation
    assert isinstance(continuation, TurnContinuation)
    assert tools.booked == ["weather:Oslo"]
    response, _ = run_spec(mode, client.prompt().tools(tools).continue_turn(continuation))
    assert response.chat_response is not None and response.chat_response.text == "It is sunny in Oslo."
    assert tools.booked == ["weather:Oslo"]  # no tool ran again
    assert model.prompts[-1].messages == continuation.progress.history  # exactly the recorded results
    assert _tool_texts(model.prompts[-1].messages) == ["sunny"]


def test_a_continuation_travels_as_json_and_keeps_the_turn_id() -> None:
    tools = Booking()
    model = ScriptedChatModel([_weather_reply(), ServerError("down"), "done"])
    client = ChatClient.builder(model).build()
    with pytest.raises(ServerError) as raised:
        client.prompt("Weather?").tools(tools).call().chat_client_response()
    moved = TurnContinuation.from_json(raised.value.continuation.to_json())
    assert moved == raised.value.continuation
    response = client.prompt().tools(tools).continue_turn(moved).call().chat_client_response()
    from chatclient.turn import turn_of

    turn = turn_of(response)
    assert turn is not None and turn.id == moved.progress.turn_id
    assert [type(m).__name__ for m in turn.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]


def test_a_failure_before_any_tool_ran_carries_no_continuation() -> None:
    model = ScriptedChatModel([ServerError("down")])
    with pytest.raises(ServerError) as raised:
        ChatClient.builder(model).build().prompt("hi").tools(Booking()).call().content()
    assert raised.value.continuation is None


def test_any_other_exception_is_wrapped_with_the_continuation() -> None:
    boom = RuntimeError("socket closed")
    model = ScriptedChatModel([_weather_reply(), boom])
    with pytest.raises(TurnInterruptedError) as raised:
        ChatClient.builder(model).build().prompt("hi").tools(Booking()).call().content()
    assert raised.value.__cause__ is boom and raised.value.continuation is not None


def _paused(client: ChatClient, tools: Booking, store: InMemoryPendingToolCallStore) -> str:
    response = client.prompt("Book the Ritz").tools(tools).call().chat_client_response()
    pending = response.context["chatclient.tool_loop.pending"]
    return store.save(pending)


ALLOW = ToolCallDecisions.of(ToolCallDecision.allow("b1", approver="ann"))


@pytest.mark.parametrize("mode", MODES)
def test_retrying_resume_from_after_a_failure_continues_the_turn_and_books_once(mode: str) -> None:
    tools, store = Booking(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([_book_reply(), ServerError("503"), ServerError("503 again"), "Booked the Ritz."])
    client = ChatClient.builder(model).build()
    state_id = _paused(client, tools, store)
    for _ in range(2):  # two failed attempts: the booking runs once, its result is kept in the store
        with pytest.raises(ServerError) as raised:
            run_spec(mode, client.prompt().tools(tools).resume_from(store, state_id, ALLOW))
        assert raised.value.continuation is not None and raised.value.continuation.stored is not None
    assert tools.booked == ["Ritz"]
    _version, text = store.progress(state_id)
    assert text is not None and JournalEntry.load(text).status == "recorded"
    response, _ = run_spec(mode, client.prompt().tools(tools).continue_turn(raised.value.continuation))
    assert response.chat_response is not None and response.chat_response.text == "Booked the Ritz."
    assert tools.booked == ["Ritz"]
    assert _tool_texts(model.prompts[-1].messages) == ["booked Ritz"]
    with pytest.raises(Exception, match="No pending tool calls"):  # completed: the state is gone
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()


def test_a_retry_with_other_decisions_is_refused_and_nothing_runs() -> None:
    tools, store = Booking(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([_book_reply(), ServerError("503")])
    client = ChatClient.builder(model).build()
    state_id = _paused(client, tools, store)
    with pytest.raises(ServerError):
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()
    deny = ToolCallDecisions.of(ToolCallDecision.deny("b1"))
    with pytest.raises(ToolCallDecisionError, match="other decisions"):
        client.prompt().tools(tools).resume_from(store, state_id, deny).call().content()
    assert tools.booked == ["Ritz"]


class BarrierStore(InMemoryPendingToolCallStore):
    """Both retries read the journal before either writes it: the race the claim must settle."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier: threading.Barrier | None = None

    def progress(self, state_id: str) -> tuple[int, str | None]:
        found = super().progress(state_id)
        if self.barrier is not None:
            self.barrier.wait(timeout=10)
        return found


def test_of_two_concurrent_retries_exactly_one_goes_on() -> None:
    tools, store = Booking(), BarrierStore()
    model = ScriptedChatModel([_book_reply(), ServerError("503"), "Booked.", "Booked."])
    client = ChatClient.builder(model).build()
    state_id = _paused(client, tools, store)
    with pytest.raises(ServerError):
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()
    store.barrier = threading.Barrier(2)
    rounds_before = len(model.prompts)
    outcomes = race(lambda: client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content())
    assert sorted(type(o).__name__ for o in outcomes) == ["TurnInProgressError", "str"]
    assert len(model.prompts) == rounds_before + 1, "the loser stopped at its claim, before the model"
    assert tools.booked == ["Ritz"]


def test_a_crash_between_start_and_result_is_reported_as_unknown_never_rerun() -> None:
    tools, store = Booking(), InMemoryPendingToolCallStore()
    model = ScriptedChatModel([_book_reply(), "I could not confirm the booking."])
    client = ChatClient.builder(model).build()
    state_id = _paused(client, tools, store)
    journal = JournalEntry(status="running", decisions=_digest(ALLOW), started=("b1",))
    assert store.record_progress(state_id, 0, journal.dump())  # what a process killed mid-tool leaves
    with pytest.raises(TurnInProgressError):  # never silently re-run
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()
    answer = client.prompt().tools(tools).resume_from(store, state_id, ALLOW, after_crash=True).call().content()
    assert answer == "I could not confirm the booking."
    assert tools.booked == []
    assert _tool_texts(model.prompts[-1].messages) == [UNKNOWN_OUTCOME_MESSAGE]


def test_an_idempotent_tool_runs_again_after_a_crash() -> None:
    ran: list[str] = []

    @tool(requires_confirmation=True, idempotent=True)
    def lookup(key: str) -> str:
        """A read."""
        ran.append(key)
        return "value"

    store = InMemoryPendingToolCallStore()
    reply = AssistantMessage(None, tool_calls=[tool_call("lookup", {"key": "k"}, id="l1")])
    client = ChatClient.builder(ScriptedChatModel([reply, "ok"])).build()
    pending = client.prompt("go").tools(lookup).call().chat_client_response().context["chatclient.tool_loop.pending"]
    state_id = store.save(pending)
    allow = ToolCallDecisions.of(ToolCallDecision.allow("l1"))
    store.record_progress(state_id, 0, JournalEntry(status="running", decisions=_digest(allow), started=("l1",)).dump())
    client.prompt().tools(lookup).resume_from(store, state_id, allow, after_crash=True).call().content()
    assert ran == ["k"]


def _digest(decisions: ToolCallDecisions) -> str:
    from chatclient.durable import decisions_digest

    return decisions_digest(decisions)


@pytest.mark.parametrize("mode", MODES)
def test_a_usage_limit_stops_the_turn_before_the_round_and_a_raised_one_continues_it(mode: str) -> None:
    tools = Booking()
    usage = Usage(prompt_tokens=60, completion_tokens=10)
    model = ScriptedChatModel([_weather_reply(), "Sunny."], usage=usage)
    client = ChatClient.builder(model).build()
    with pytest.raises(UsageLimitExceededError, match="total_tokens") as raised:
        run_spec(mode, client.prompt("Weather?").tools(tools).usage_limits(UsageLimits(total_tokens=50)))
    assert len(model.prompts) == 1 and tools.booked == ["weather:Oslo"]
    spec = client.prompt().tools(tools).continue_turn(raised.value.continuation)
    response, _ = run_spec(mode, spec.usage_limits(UsageLimits(total_tokens=500)))
    assert response.chat_response is not None and response.chat_response.text == "Sunny."
    assert tools.booked == ["weather:Oslo"]


def test_a_request_limit_counts_model_rounds() -> None:
    model = ScriptedChatModel([_weather_reply(), "Sunny."])
    client = ChatClient.builder(model).build()
    with pytest.raises(UsageLimitExceededError, match="requests"):
        client.prompt("Weather?").tools(Booking()).usage_limits(UsageLimits(requests=1)).call().content()
    assert len(model.prompts) == 1


def test_usage_limits_refuse_bad_values() -> None:
    from chatclient.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        UsageLimits(requests=-1)


def test_a_resume_refused_when_its_calls_were_about_to_run_leaves_the_state_resumable() -> None:
    from advisors.tool_calling import ToolCallingAdvisor
    from chatclient.tools import ToolCallingManager

    class RefusesOnce(ToolCallingManager):
        refused = False

        def execute_tool_calls(self, *args: Any, **kwargs: Any) -> Any:
            if args[2] is not None and not self.refused:  # the resume's run (the pause has no decisions)
                self.refused = True
                raise ToolCallDecisionError("refused at the last moment; nothing ran")
            return super().execute_tool_calls(*args, **kwargs)

    tools, store = Booking(), InMemoryPendingToolCallStore()
    loop = ToolCallingAdvisor(RefusesOnce())
    client = ChatClient.builder(ScriptedChatModel([_book_reply(), "Booked."])).default_advisors(loop).build()
    state_id = _paused(client, tools, store)
    with pytest.raises(ToolCallDecisionError, match="last moment"):
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()
    deny = ToolCallDecisions.of(ToolCallDecision.deny("b1"))  # released: even other decisions may now resume it
    assert client.prompt().tools(tools).resume_from(store, state_id, deny).call().content() == "Booked."
    assert tools.booked == []


def test_a_tool_limit_refusal_after_a_resume_leaves_the_results_recorded_not_started() -> None:
    from advisors.tool_calling import ToolCallingAdvisor
    from chatclient.errors import ToolCallLimitExceededError
    from chatclient.tools import ToolCallingManager, ToolCallLimitPolicy

    manager = ToolCallingManager.builder().max_total_tool_calls(1).on_limit_exceeded(ToolCallLimitPolicy.RAISE)
    tools, store = Booking(), InMemoryPendingToolCallStore()
    script: list[AssistantMessage | str] = [_book_reply(), _weather_reply(), "Booked, no weather."]
    loop = ToolCallingAdvisor(manager.build())
    client = ChatClient.builder(ScriptedChatModel(script)).default_advisors(loop).build()
    state_id = _paused(client, tools, store)
    with pytest.raises(ToolCallLimitExceededError):
        client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content()
    _, text = store.progress(state_id)
    assert text is not None and JournalEntry.load(text).status == "recorded"  # not "running": nothing started
    assert client.prompt().tools(tools).resume_from(store, state_id, ALLOW).call().content() == "Booked, no weather."
    assert tools.booked == ["Ritz"]
