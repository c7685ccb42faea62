"""Issue 14: blank arguments, plain-object results and ``None`` results, through the manager and the client.

Each case runs through ``execute_tool_calls`` / ``aexecute_tool_calls`` directly and through a
``ChatClient`` in every mode, where the ``ToolResponseMessage`` the model receives in its second round
is what is checked.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest

from chatclient import ChatClient, ToolResponseMessage
from chatclient.messages import AssistantMessage, ToolResponse
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, run_in_mode, tool_call
from chatclient.tools import ToolCallback, ToolCallingManager, ToolContext, ToolDefinition, ToolLike, tool

from .helpers import call, prompt, reply

MANAGER = ToolCallingManager.builder().build()
BLANK = ["", "   ", "\n\t", "null", " null "]


class RecordingCallback(ToolCallback):
    """A hand-written tool (no ``FunctionToolCallback``): it sees the arguments exactly as passed."""

    def __init__(self, name: str = "ping") -> None:
        self._name = name
        self.seen: list[str] = []

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(name=self._name, description="records its arguments")

    def call(self, arguments: str, context: ToolContext | None = None) -> str:
        self.seen.append(arguments)
        return "pong"


class AsyncRecordingCallback(RecordingCallback):
    is_async = True

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str:
        self.seen.append(arguments)
        return "pong"


class NoneCallback(ToolCallback):
    """A hand-written callback that returns ``None`` although its type says ``str``."""

    @property
    def definition(self) -> ToolDefinition:
        return ToolDefinition(name="fire", description="does something, says nothing")

    def call(self, arguments: str, context: ToolContext | None = None) -> str:
        return None  # type: ignore[return-value]


class PlainObject:
    """No dataclass, no pydantic: what Jackson would serialise through its public fields."""

    def __init__(self) -> None:
        self.city = "Paris"
        self.temperature = 21.5
        self._secret = "hidden"
        self.nested = Nested()


class Nested:
    def __init__(self) -> None:
        self.unit = "C"


class Slotted:
    __slots__ = ("_private", "name")

    def __init__(self) -> None:
        self.name = "slots"
        self._private = 1


@dataclasses.dataclass
class Reading:
    value: float


class Opaque:
    """Nothing public, no ``__str__``: nothing meaningful can be sent."""

    def __init__(self) -> None:
        self._state = 1


@tool
def weather() -> PlainObject:
    """The weather as a plain object."""
    return PlainObject()


@tool
def slotted() -> Slotted:
    return Slotted()


@tool
def opaque() -> Opaque:
    return Opaque()


@tool
def lock() -> object:
    """A result holding something that cannot be serialised, one level down."""
    return {"guard": threading.Lock()}


@tool
def fire_and_forget() -> None:
    """Runs for its effect only."""


@tool
async def afire_and_forget() -> None:
    """Runs for its effect only, asynchronously."""


def only_response(history: tuple[Any, ...]) -> ToolResponse:
    message = history[-1]
    assert isinstance(message, ToolResponseMessage)
    (response,) = message.responses
    return response


async def both_paths(tools: list[ToolLike], arguments: str, name: str) -> list[ToolResponse]:
    """The single response of one call, from the sync and from the async manager path."""
    p, r = prompt(tools), reply(call(name, arguments))
    sync = MANAGER.execute_tool_calls(p, r)
    asynchronous = await MANAGER.aexecute_tool_calls(p, r)
    return [only_response(sync.conversation_history), only_response(asynchronous.conversation_history)]


def second_round_response(mode: str, tools: list[ToolLike], arguments: str, name: str) -> ToolResponse:
    """What the model received for the one call of its first reply, in ``mode``."""
    script: list[ScriptItem] = [AssistantMessage(None, tool_calls=[tool_call(name, arguments, id="c1")]), "ok"]
    run = run_in_mode(mode, [], script, tools=tools)
    assert run.text == "ok"
    return only_response(tuple(run.prompts[1].messages))


class TestBlankArguments:
    @pytest.mark.parametrize("arguments", BLANK)
    @pytest.mark.parametrize("callback_type", [RecordingCallback, AsyncRecordingCallback])
    async def test_a_hand_written_callback_gets_an_empty_object(
        self, arguments: str, callback_type: type[RecordingCallback]
    ) -> None:
        callback = callback_type()
        responses = await both_paths([callback], arguments, "ping")
        assert callback.seen == ["{}", "{}"]
        assert [(r.response_data, r.is_error) for r in responses] == [("pong", False)] * 2

    @pytest.mark.parametrize("arguments", BLANK)
    async def test_a_function_tool_without_parameters_runs(self, arguments: str) -> None:
        responses = await both_paths([fire_and_forget], arguments, "fire_and_forget")
        assert [r.is_error for r in responses] == [False, False]

    def test_the_history_keeps_the_models_raw_arguments(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([RecordingCallback()]), reply(call("ping", "null")))
        assistant = result.conversation_history[-2]
        assert isinstance(assistant, AssistantMessage) and assistant.tool_calls[0].arguments == "null"

    def test_arguments_that_are_not_blank_are_passed_unchanged(self) -> None:
        callback = RecordingCallback()
        MANAGER.execute_tool_calls(prompt([callback]), reply(call("ping", ' {"a": null} ')))
        assert callback.seen == [' {"a": null} ']

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("arguments", ["", "null"])
    def test_through_the_client(self, mode: str, arguments: str) -> None:
        callback = RecordingCallback()
        response = second_round_response(mode, [callback], arguments, "ping")
        assert callback.seen == ["{}"]
        assert (response.response_data, response.is_error) == ("pong", False)


class TestObjectResults:
    EXPECTED = '{"city":"Paris","temperature":21.5,"nested":{"unit":"C"}}'

    async def test_a_plain_object_is_sent_as_its_public_attributes(self) -> None:
        responses = await both_paths([weather], "{}", "weather")
        assert [(r.response_data, r.is_error) for r in responses] == [(self.EXPECTED, False)] * 2

    async def test_slots_count_as_attributes(self) -> None:
        responses = await both_paths([slotted], "{}", "slotted")
        assert [r.response_data for r in responses] == ['{"name":"slots"}'] * 2

    @pytest.mark.parametrize(("fn", "name", "kind"), [(opaque, "opaque", "Opaque"), (lock, "lock", "lock")])
    async def test_an_object_with_nothing_to_send_is_a_clear_error_not_an_address(
        self, fn: ToolLike, name: str, kind: str
    ) -> None:
        for response in await both_paths([fn], "{}", name):
            assert response.is_error
            assert response.response_data.startswith(f"Tool '{name}' ran, but its result cannot be sent to the model")
            assert kind in response.response_data
            assert "0x" not in response.response_data

    async def test_a_hand_written_callback_returning_an_object_is_converted_too(self) -> None:
        class ObjectCallback(RecordingCallback):
            def call(self, arguments: str, context: ToolContext | None = None) -> str:
                return PlainObject()  # type: ignore[return-value]

        responses = await both_paths([ObjectCallback()], "{}", "ping")
        assert [(r.response_data, r.is_error) for r in responses] == [(self.EXPECTED, False)] * 2

    def test_values_that_already_serialised_are_unchanged(self) -> None:
        @tool
        def readings() -> list[Reading]:
            return [Reading(1.5)]

        result = MANAGER.execute_tool_calls(prompt([readings]), reply(call("readings")))
        assert result.tool_responses[0].response_data == '[{"value":1.5}]'

    @pytest.mark.parametrize("mode", MODES)
    def test_through_the_client(self, mode: str) -> None:
        response = second_round_response(mode, [weather], "{}", "weather")
        assert (response.response_data, response.is_error) == (self.EXPECTED, False)

    @pytest.mark.parametrize("mode", MODES)
    def test_an_unserialisable_result_through_the_client(self, mode: str) -> None:
        response = second_round_response(mode, [opaque], "{}", "opaque")
        assert response.is_error and "0x" not in response.response_data


class TestNoneResults:
    @pytest.mark.parametrize(
        ("tools", "name"),
        [([fire_and_forget], "fire_and_forget"), ([afire_and_forget], "afire_and_forget"), ([NoneCallback()], "fire")],
        ids=["sync-function", "async-function", "hand-written-callback"],
    )
    async def test_none_is_a_success_reported_as_done(self, tools: list[ToolLike], name: str) -> None:
        responses = await both_paths(tools, "{}", name)
        assert [(r.response_data, r.is_error) for r in responses] == [("Done", False)] * 2

    def test_a_return_direct_tool_returning_none_returns_done(self) -> None:
        @tool(return_direct=True)
        def shutdown() -> None:
            """Stops something."""

        result = MANAGER.execute_tool_calls(prompt([shutdown]), reply(call("shutdown")))
        assert result.return_direct
        assert [g.output.text for g in result.build_generations()] == ["Done"]

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("tools", [[fire_and_forget], [NoneCallback()]], ids=["function", "callback"])
    def test_through_the_client(self, mode: str, tools: list[ToolLike]) -> None:
        name = "fire" if isinstance(tools[0], NoneCallback) else "fire_and_forget"
        response = second_round_response(mode, tools, "{}", name)
        assert (response.response_data, response.is_error) == ("Done", False)


def test_client_builder_runs_a_none_tool_end_to_end() -> None:
    """The shortest user path: ``.tools(fn)`` with a ``-> None`` tool, one call."""
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("fire_and_forget")]), "fired"])
    assert ChatClient.create(model).prompt("go").tools(fire_and_forget).call().content() == "fired"
    last = model.prompts[1].messages[-1]
    assert isinstance(last, ToolResponseMessage) and last.responses[0].response_data == "Done"
