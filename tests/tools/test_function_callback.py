"""Calling function tools: argument validation, context injection, results, failures, sync and async."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from chatclient.errors import ConfigurationError, ToolArgumentsError, ToolExecutionError, UnknownToolError
from chatclient.tools import FunctionToolCallback, ToolContext, tool, tool_callbacks_from


class Point(BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Reading:
    sensor: str
    value: float


@tool
def move(point: Point, steps: Annotated[int, Field(ge=1)] = 1) -> Point:
    """Move a point right."""
    return Point(x=point.x + steps, y=point.y)


@tool
def fail(message: str) -> str:
    raise ValueError(message)


@tool
async def async_echo(text: str, context: ToolContext) -> str:
    await asyncio.sleep(0)
    return f"{text} from {context.get('user', 'nobody')}"


def only(fn: object) -> FunctionToolCallback:
    (callback,) = tool_callbacks_from(fn)
    assert isinstance(callback, FunctionToolCallback)
    return callback


class TestArguments:
    def test_values_are_coerced_and_models_built(self) -> None:
        assert only(move).call('{"point": {"x": "1", "y": 2}, "steps": "3"}') == '{"x":4,"y":2}'

    @pytest.mark.parametrize("arguments", ["", "   ", "\n"])
    def test_blank_arguments_mean_no_arguments(self, arguments: str) -> None:
        @tool
        def ping(reply: str = "pong") -> str:
            return reply

        assert only(ping).call(arguments) == "pong"

    def test_malformed_json_says_it_is_not_json(self) -> None:
        with pytest.raises(ToolArgumentsError) as info:
            only(move).call('{"point": {"x": 1')
        assert str(info.value).startswith("The arguments for tool 'move' are not valid JSON (")
        assert info.value.tool_name == "move"

    def test_validation_errors_list_each_field_with_its_problem(self) -> None:
        with pytest.raises(ToolArgumentsError) as info:
            only(move).call('{"point": {"x": "one"}, "steps": 0, "speed": 9}')
        assert str(info.value) == (
            "Invalid arguments for tool 'move': "
            "point.x: Input should be a valid integer, unable to parse string as an integer (got 'one'); "
            "point.y: Field required; "
            "steps: Input should be greater than or equal to 1 (got 0); "
            "speed: Extra inputs are not permitted (got 9)"
        )

    def test_arguments_that_are_not_an_object_are_reported(self) -> None:
        with pytest.raises(ToolArgumentsError, match="the arguments must be a JSON object"):
            only(move).call("[1, 2]")

    def test_validate_arguments_checks_without_running(self) -> None:
        ran = []

        @tool
        def record(n: int) -> None:
            ran.append(n)

        only(record).validate_arguments('{"n": 1}')
        with pytest.raises(ToolArgumentsError, match="n: Field required"):
            only(record).validate_arguments("{}")
        assert ran == []

    def test_positional_only_and_keyword_only_parameters_are_passed_correctly(self) -> None:
        @tool
        def shape(a: int, /, b: int, *, c: int) -> str:
            return f"{a}-{b}-{c}"

        assert only(shape).call('{"c": 3, "b": 2, "a": 1}') == "1-2-3"


class TestResults:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            ("plain text", "plain text"),
            (None, "Done"),
            (42, "42"),
            ({"a": [1, 2]}, '{"a":[1,2]}'),
            (Point(x=1, y=2), '{"x":1,"y":2}'),
            (Reading("t1", 20.5), '{"sensor":"t1","value":20.5}'),
        ],
    )
    def test_default_conversion(self, value: object, text: str) -> None:
        @tool
        def produce() -> object:
            return value

        assert only(produce).call("{}") == text

    def test_custom_result_converter(self) -> None:
        callback = FunctionToolCallback.builder("n", lambda: 7).result_converter(lambda v: f"<{v}>").build()
        assert callback.call("") == "<7>"


class TestFailures:
    def test_exception_becomes_tool_execution_error_with_type_and_message(self) -> None:
        with pytest.raises(ToolExecutionError) as info:
            only(fail).call('{"message": "disk full"}')
        assert str(info.value) == "Tool 'fail' failed with ValueError: disk full"
        assert info.value.tool_name == "fail"
        assert isinstance(info.value.__cause__, ValueError)

    def test_deliberate_tool_errors_pass_through(self) -> None:
        @tool
        def picky() -> str:
            raise UnknownToolError("nope", tool_name="x", call_id=None, available=[])

        with pytest.raises(UnknownToolError, match="nope"):
            only(picky).call("")

    def test_base_exceptions_propagate_untouched(self) -> None:
        @tool
        def interrupt() -> str:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            only(interrupt).call("")

    async def test_async_tool_exception_is_wrapped(self) -> None:
        @tool
        async def broken() -> str:
            raise RuntimeError

        with pytest.raises(ToolExecutionError, match=r"^Tool 'broken' failed with RuntimeError$"):
            await only(broken).acall("")


class TestContext:
    def test_context_is_injected_by_annotation(self) -> None:
        @tool
        def whoami(context: ToolContext, greeting: str = "hi") -> str:
            return f"{greeting} {context['user']}"

        assert only(whoami).call("{}", ToolContext({"user": "ada"})) == "hi ada"

    def test_missing_context_is_an_empty_one(self) -> None:
        seen: list[ToolContext] = []

        @tool
        def look(context: ToolContext) -> str:
            seen.append(context)
            return "ok"

        only(look).call("{}")
        assert len(seen[0]) == 0

    def test_model_cannot_set_the_context(self) -> None:
        @tool
        def look(context: ToolContext) -> str:
            return "ok"

        with pytest.raises(ToolArgumentsError, match="context: Extra inputs are not permitted"):
            only(look).call('{"context": {"user": "mallory"}}')


class TestSyncAndAsync:
    def test_sync_tool_runs_in_the_calling_thread(self) -> None:
        @tool
        def where() -> str:
            return threading.current_thread().name

        callback = only(where)
        assert not callback.is_async
        assert callback.call("") == threading.current_thread().name

    async def test_sync_tool_acall_runs_in_a_worker_thread(self) -> None:
        @tool
        def where() -> str:
            return threading.current_thread().name

        assert await only(where).acall("") != threading.current_thread().name

    async def test_async_tool_is_awaited(self) -> None:
        callback = only(async_echo)
        assert callback.is_async
        assert await callback.acall('{"text": "hi"}', ToolContext({"user": "ada"})) == "hi from ada"

    def test_async_tool_can_be_called_from_sync_code(self) -> None:
        assert only(async_echo).call('{"text": "hi"}') == "hi from nobody"

    async def test_callable_object_with_async_call_is_an_async_tool(self) -> None:
        class Greeter:
            async def __call__(self, name: str) -> str:
                return f"hello {name}"

        callback = FunctionToolCallback.builder("greet", Greeter()).build()
        assert callback.is_async
        assert callback.definition.input_schema["required"] == ["name"]
        assert await callback.acall('{"name": "ada"}') == "hello ada"

    def test_lambda_with_input_type_receives_the_model(self) -> None:
        callback = FunctionToolCallback.builder("xy", lambda p: p.x * p.y).input_type(Point).build()
        assert callback.call('{"x": 6, "y": 7}') == "42"


class Account:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.balance = 0

    @tool(description="Deposit money")
    def deposit(self, amount: int) -> int:
        self.balance += amount
        return self.balance

    @tool
    async def whose(self) -> str:
        """Whose account this is."""
        return self.owner

    def not_a_tool(self) -> None:
        raise AssertionError


class SavingsAccount(Account):
    @tool(description="Deposit with a bonus")
    def deposit(self, amount: int) -> int:
        self.balance += amount + 1
        return self.balance


class Units:
    factor = 10

    @staticmethod
    @tool
    def double(x: int) -> int:
        return 2 * x

    @classmethod
    @tool
    def scale(cls, x: int) -> int:
        return cls.factor * x


class TestMethods:
    def test_each_instance_gets_its_own_bound_tools(self) -> None:
        alice, bob = Account("alice"), Account("bob")
        alice_deposit, alice_whose = tool_callbacks_from(alice)
        (bob_deposit, _) = tool_callbacks_from(bob)
        alice_deposit.call('{"amount": 5}')
        alice_deposit.call('{"amount": 5}')
        bob_deposit.call('{"amount": 1}')
        assert (alice.balance, bob.balance) == (10, 1)
        assert alice_whose.call("") == "alice"
        assert alice_deposit.definition is bob_deposit.definition
        assert alice_deposit.definition.input_schema["properties"] == {"amount": {"type": "integer"}}

    def test_overridden_tool_methods_replace_the_base_ones(self) -> None:
        account = SavingsAccount("carol")
        callbacks = tool_callbacks_from(account)
        assert [c.name for c in callbacks] == ["deposit", "whose"]
        assert callbacks[0].definition.description == "Deposit with a bonus"
        assert callbacks[0].call('{"amount": 1}') == "2"

    def test_static_and_class_methods_are_tools_of_an_instance(self) -> None:
        double, scale = tool_callbacks_from(Units())
        assert double.call('{"x": 2}') == "4"
        assert scale.definition.input_schema["properties"] == {"x": {"type": "integer"}}
        assert scale.call('{"x": 2}') == "20"

    def test_bound_method_is_a_tool_on_its_own(self) -> None:
        account = Account("dave")
        (callback,) = tool_callbacks_from(account.deposit)
        callback.call('{"amount": 3}')
        assert account.balance == 3

    def test_unbound_method_or_class_is_a_clear_error(self) -> None:
        with pytest.raises(ConfigurationError, match="is a method: pass an instance"):
            tool_callbacks_from(Account.deposit)
        with pytest.raises(ConfigurationError, match="Account is a class: pass an instance"):
            tool_callbacks_from(Account)

    def test_decorated_methods_stay_directly_callable(self) -> None:
        account = Account("erin")
        assert account.deposit(4) == 4
