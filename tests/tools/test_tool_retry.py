"""``ToolRetry``: a tool asks the model for a corrected call (issue 31, item 4).

The model gets the tool's message as the call's result, marked as a retry request; retries count
against the loop's limits, and a tool may be retried at most ``max_retries`` times per turn.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, UserMessage, tool
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import (
    FunctionToolCallback,
    ToolCallback,
    ToolCallingManager,
    ToolCallLimitPolicy,
    ToolContext,
    ToolDefinition,
    ToolRetriesExceededError,
    ToolRetry,
    rethrowing_exception_processor,
)

from .helpers import ask, call, prompt, reply

MODES = ["call", "stream", "acall", "astream"]


class _Booking:
    """A ``book`` tool that wants ISO dates, and a model that first sends "May 1", then the date the
    tool asked for; ``runs`` counts the tool's runs."""

    def __init__(self, *, always_retry: bool = False, max_retries: int | None = None) -> None:
        self.runs = 0

        @tool(max_retries=max_retries)
        def book(date: str) -> str:
            """Books a table on a date."""
            self.runs += 1
            if always_retry or not date[:4].isdigit():
                raise ToolRetry(f"date must be ISO 8601 (YYYY-MM-DD), not {date!r}")
            return f"booked for {date}"

        self.tool = book

    @staticmethod
    def script(p: Prompt) -> Any:
        last = p.messages[-1]
        if isinstance(last, UserMessage):
            return AssistantMessage(None, tool_calls=[tool_call("book", {"date": "May 1"})])
        assert isinstance(last, ToolResponseMessage)
        response = last.responses[0]
        tools_allowed = getattr(p.options, "tool_choice", None) != "none"  # the loop's last round forbids them
        if response.metadata.get("retry") is not None and tools_allowed:
            attempt = response.metadata["retry"]
            return AssistantMessage(None, tool_calls=[tool_call("book", {"date": f"2026-05-0{attempt}"})])
        return f"answer: {response.response_data}"


def _client(booking: _Booking, manager: ToolCallingManager | None = None) -> ChatClient:
    model = ScriptedChatModel(booking.script)
    builder = ChatClient.builder(model)
    if manager is not None:
        builder = builder.tool_calling_advisor(ToolCallingAdvisor(manager))
    return builder.build()


async def _ask(client: ChatClient, mode: str, tools: list[Any]) -> str:
    return await ask(client.prompt("book a table").tools(*tools), mode)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_asks_for_a_corrected_call_and_the_model_gets_its_message_marked_as_a_retry(mode: str) -> None:
    booking = _Booking()
    client = _client(booking)
    answer = await _ask(client, mode, [booking.tool])
    assert answer == "answer: booked for 2026-05-01"
    assert booking.runs == 2


def test_the_retry_response_carries_the_message_the_mark_and_the_retry_number() -> None:
    booking = _Booking()
    result = ToolCallingManager().execute_tool_calls(
        prompt([booking.tool]), reply(call("book", json.dumps({"date": "May 1"}), id="c1"))
    )
    (response,) = result.tool_responses
    assert response.is_error and response.metadata == {"retry": 1}
    assert response.response_data == (
        "The tool asks for a corrected call: date must be ISO 8601 (YYYY-MM-DD), not 'May 1'"
    )
    assert result.limit_exceeded is None


@pytest.mark.parametrize("mode", MODES)
async def test_past_its_max_retries_the_model_is_told_and_answers_without_tools(mode: str) -> None:
    booking = _Booking(always_retry=True, max_retries=2)
    answer = await _ask(_client(booking), mode, [booking.tool])
    assert booking.runs == 3  # the first call and two retries; the third request is a breach
    assert answer.startswith(
        "answer: Tool 'book' asked for a corrected call more than 2 time(s) in this turn (max_retries=2); "
        "it is not retried again. Its last request: date must be ISO 8601"
    )


def test_under_the_raise_policy_too_many_retries_raise_a_clear_error() -> None:
    booking = _Booking(always_retry=True)
    manager = ToolCallingManager.builder().on_limit_exceeded(ToolCallLimitPolicy.RAISE).build()
    with pytest.raises(ToolRetriesExceededError) as raised:
        _client(booking, manager).prompt("book").tools(booking.tool).call().content()
    error = raised.value
    assert (error.kind, error.limit, error.tool_name) == ("retries", 1, "book")  # the default: one retry
    assert isinstance(error.__cause__, ToolRetry) and error.call_id is not None
    assert booking.runs == 2


def test_the_managers_default_applies_to_tools_without_their_own_and_a_tools_own_wins() -> None:
    booking = _Booking(always_retry=True)
    manager = ToolCallingManager.builder().max_tool_retries(3).build()
    _client(booking, manager).prompt("book").tools(booking.tool).call().content()
    assert booking.runs == 4
    own = _Booking(always_retry=True, max_retries=0)
    _client(own, manager).prompt("book").tools(own.tool).call().content()
    assert own.runs == 1  # no retry allowed: the first request is already a breach


def test_retries_count_against_the_loops_call_limits() -> None:
    booking = _Booking(always_retry=True, max_retries=10)
    manager = ToolCallingManager.builder().max_calls_per_tool(2).build()
    answer = _client(booking, manager).prompt("book").tools(booking.tool).call().content()
    assert booking.runs == 2  # the third call is over the per-tool limit and never runs
    assert answer is not None and "Tool call limit (2) exceeded for tool 'book'" in answer


def test_two_retries_in_one_batch_are_counted_one_after_the_other() -> None:
    booking = _Booking(always_retry=True, max_retries=1)
    batch = reply(call("book", '{"date": "a"}', id="c1"), call("book", '{"date": "b"}', id="c2"))
    result = ToolCallingManager().execute_tool_calls(prompt([booking.tool]), batch)
    first, second = result.tool_responses
    assert first.metadata == {"retry": 1}
    assert "more than 1 time(s)" in second.response_data and "retry" not in second.metadata
    assert result.limit_exceeded == second.response_data


def test_a_processor_that_raises_every_failure_still_lets_a_retry_through() -> None:
    booking = _Booking()
    manager = ToolCallingManager(exception_processor=rethrowing_exception_processor)
    answer = _client(booking, manager).prompt("book").tools(booking.tool).call().content()
    assert answer == "answer: booked for 2026-05-01"


class _Handwritten(ToolCallback):
    """A hand-written (async) callback raises ``ToolRetry`` the same way."""

    is_async = True

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(name="book", description="Books a table.")

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str:
        if not json.loads(arguments)["date"][:4].isdigit():
            raise ToolRetry("use an ISO date")
        return "booked"


@pytest.mark.parametrize("callback", [_Handwritten(), "async-function", "builder"])
def test_a_retry_from_any_kind_of_tool_is_a_retry(callback: Any) -> None:
    if callback == "async-function":

        @tool(name="book")
        async def book(date: str) -> str:
            """Books."""
            raise ToolRetry("use an ISO date")

        callback = book
    elif callback == "builder":

        def raise_retry(date: str) -> str:
            raise ToolRetry("use an ISO date")

        callback = FunctionToolCallback.builder("book", raise_retry).max_retries(1).build()
    result = ToolCallingManager().execute_tool_calls(prompt([callback]), reply(call("book", '{"date": "May"}')))
    (response,) = result.tool_responses
    assert response.metadata == {"retry": 1}
    assert response.response_data == "The tool asks for a corrected call: use an ISO date"


def test_a_retry_needs_a_message_and_max_retries_a_count() -> None:
    with pytest.raises(ValueError, match="ToolRetry needs a message"):
        ToolRetry("  ")
    with pytest.raises(TypeError, match="ToolRetry's message is the text"):
        ToolRetry(5)  # type: ignore[arg-type]
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="max_retries is a number of retries"):
            tool(max_retries=bad)  # type: ignore[arg-type]
