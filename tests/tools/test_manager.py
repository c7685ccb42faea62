"""ToolCallingManager: the history it builds, failures reported to the model, concurrency, return_direct."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from chatclient.errors import ConfigurationError, ToolError, ToolExecutionError
from chatclient.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatclient.options import ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, FinishReason, Generation
from chatclient.tools import (
    DefaultToolExceptionProcessor,
    FunctionToolCallback,
    ToolCallback,
    ToolCallingManager,
    ToolContext,
    ToolDefinition,
    ToolExecutionResult,
    tool,
)

from .helpers import call, prompt, reply


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode(reason: str) -> str:
    raise ValueError(reason)


@tool
def whoami(context: ToolContext) -> str:
    return str(context["user"])


@tool(return_direct=True)
def final_a() -> str:
    return "A"


@tool(return_direct=True)
def final_b() -> str:
    return "B"


@tool
def sleepy(seconds: float, label: str) -> str:
    time.sleep(seconds)
    return label


@tool
async def asleepy(seconds: float, label: str) -> str:
    await asyncio.sleep(seconds)
    return label


@tool
def thread_name() -> str:
    return threading.current_thread().name


MANAGER = ToolCallingManager.builder().build()


def results(result: ToolExecutionResult) -> list[tuple[str, str, bool]]:
    return [(r.id, r.response_data, r.is_error) for r in result.tool_responses]


class TestHistory:
    def test_history_is_prompt_then_assistant_message_then_one_tool_response_message(self) -> None:
        history: list[Message] = [SystemMessage("be brief"), UserMessage("sum please")]
        response = reply(call("add", '{"a": 1, "b": 2}', id="c1"), call("add", '{"a": 3, "b": 4}', id="c2"))
        result = MANAGER.execute_tool_calls(prompt([add], history=history), response)

        assert result.conversation_history == (
            *history,
            response.generations[0].output,
            ToolResponseMessage(
                [
                    ToolResponse(id="c1", name="add", response_data="3"),
                    ToolResponse(id="c2", name="add", response_data="7"),
                ]
            ),
        )
        assert result.return_direct is False
        assert result.limit_exceeded is None

    def test_first_generation_with_tool_calls_is_used(self) -> None:
        with_calls = AssistantMessage(None, tool_calls=[call("add", '{"a": 1, "b": 1}')])
        response = ChatResponse([Generation(AssistantMessage("thinking")), Generation(with_calls)])
        result = MANAGER.execute_tool_calls(prompt([add]), response)
        assert result.conversation_history[-2] is with_calls
        assert results(result) == [("call_add", "2", False)]

    def test_reply_without_tool_calls_is_an_error(self) -> None:
        with pytest.raises(ConfigurationError, match="No tool call requested by the chat model"):
            MANAGER.execute_tool_calls(prompt([add]), ChatResponse.of("just text"))

    def test_tool_context_comes_from_the_options(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([whoami], context={"user": "ada"}), reply(call("whoami")))
        assert results(result) == [("call_whoami", "ada", False)]

    def test_empty_arguments_mean_an_empty_object(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([final_a]), reply(call("final_a", "")))
        assert results(result) == [("call_final_a", "A", False)]

    def test_resolve_tool_definitions(self) -> None:
        options = ToolCallingChatOptions(tool_callbacks=prompt([add, whoami]).tool_callbacks)
        definitions = MANAGER.resolve_tool_definitions(options)
        assert [d.name for d in definitions] == ["add", "whoami"]
        assert all(isinstance(d, ToolDefinition) for d in definitions)


class TestFailuresAreToldToTheModel:
    def test_unknown_tool_lists_the_available_tools(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([add, whoami]), reply(call("subtract", id="c1")))
        assert results(result) == [
            ("c1", "Unknown tool 'subtract'. Available tools: add, whoami.", True),
        ]

    def test_malformed_json_and_invalid_arguments(self) -> None:
        response = reply(call("add", '{"a": 1,', id="c1"), call("add", '{"a": "x"}', id="c2"))
        result = MANAGER.execute_tool_calls(prompt([add]), response)
        (first, second) = results(result)
        assert first[2] and first[1].startswith("The arguments for tool 'add' are not valid JSON")
        assert second == (
            "c2",
            "Invalid arguments for tool 'add': "
            "a: Input should be a valid integer, unable to parse string as an integer (got 'x'); "
            "b: Field required",
            True,
        )

    def test_tool_that_raises_reports_the_exception(self) -> None:
        response = reply(call("explode", '{"reason": "no network"}', id="c1"), call("add", '{"a":1,"b":1}'))
        result = MANAGER.execute_tool_calls(prompt([explode, add]), response)
        assert results(result) == [
            ("c1", "Tool 'explode' failed with ValueError: no network", True),
            ("call_add", "2", False),
        ]

    def test_custom_callback_raising_any_exception_is_reported_too(self) -> None:
        class Flaky(ToolCallback):
            @property
            def definition(self) -> ToolDefinition:
                return ToolDefinition(name="flaky", description="fails")

            def call(self, arguments: str, context: ToolContext | None = None) -> str:
                raise ConnectionError("reset by peer")

        result = MANAGER.execute_tool_calls(prompt([Flaky()]), reply(call("flaky")))
        assert results(result) == [("call_flaky", "Tool 'flaky' failed with ConnectionError: reset by peer", True)]

    def test_configuration_errors_are_not_hidden_from_the_developer(self) -> None:
        @tool
        def unbuildable(x: NotDefinedAnywhere) -> str:  # type: ignore[name-defined]  # noqa: F821
            return ""

        with pytest.raises(ConfigurationError, match="Cannot build the argument schema"):
            MANAGER.execute_tool_calls(prompt([unbuildable]), reply(call("unbuildable")))

    def test_processor_sees_the_error_with_its_call_id(self) -> None:
        seen: list[ToolError] = []

        def processor(error: ToolError) -> str:
            seen.append(error)
            return f"sorry: {error.tool_name}"

        manager = ToolCallingManager.builder().exception_processor(processor).build()
        result = manager.execute_tool_calls(prompt([explode]), reply(call("explode", '{"reason": "r"}', id="c9")))
        assert results(result) == [("c9", "sorry: explode", True)]
        assert isinstance(seen[0], ToolExecutionError) and seen[0].call_id == "c9"

    def test_processor_can_rethrow_the_original_exception_after_the_batch_finished(self) -> None:
        finished: list[str] = []

        @tool
        def slow_ok() -> str:
            time.sleep(0.05)
            finished.append("slow_ok")
            return "ok"

        manager = (
            ToolCallingManager.builder()
            .exception_processor(DefaultToolExceptionProcessor(rethrow=(ValueError,)))
            .build()
        )
        response = reply(call("explode", '{"reason": "fatal"}'), call("slow_ok"))
        with pytest.raises(ValueError, match="fatal"):
            manager.execute_tool_calls(prompt([explode, slow_ok]), response)
        assert finished == ["slow_ok"]

    async def test_always_rethrowing_processor_on_the_async_path(self) -> None:
        manager = ToolCallingManager.builder().exception_processor(DefaultToolExceptionProcessor(always=True)).build()
        with pytest.raises(ToolExecutionError, match="failed with ValueError: boom") as info:
            await manager.aexecute_tool_calls(prompt([explode]), reply(call("explode", '{"reason": "boom"}')))
        assert isinstance(info.value.__cause__, ValueError)

    def test_default_processor_keeps_unlisted_failures_for_the_model(self) -> None:
        manager = (
            ToolCallingManager.builder().exception_processor(DefaultToolExceptionProcessor(rethrow=(KeyError,))).build()
        )
        result = manager.execute_tool_calls(prompt([explode]), reply(call("explode", '{"reason": "r"}')))
        assert results(result)[0][2] is True


class TestReturnDirect:
    def test_all_return_direct_tools_succeeding_returns_direct(self) -> None:
        response = reply(call("final_a", id="c1"), call("final_b", id="c2"))
        result = MANAGER.execute_tool_calls(prompt([final_a, final_b]), response)
        assert result.return_direct is True
        generations = result.build_generations()
        assert [g.output.text for g in generations] == ["A", "B"]
        assert all(g.finish_reason is FinishReason.RETURN_DIRECT for g in generations)
        assert generations[1].metadata.extra == {"tool_id": "c2", "tool_name": "final_b"}

    @pytest.mark.parametrize(
        "calls",
        [
            [call("final_a"), call("add", '{"a": 1, "b": 1}')],
            [call("final_a"), call("final_b", '{"oops": 1}')],
            [call("final_a"), call("missing")],
        ],
        ids=["one-tool-not-direct", "one-direct-tool-failed", "one-unknown-tool"],
    )
    def test_any_other_call_in_the_batch_prevents_return_direct(self, calls: list[object]) -> None:
        result = MANAGER.execute_tool_calls(prompt([final_a, final_b, add]), reply(*calls))  # type: ignore[arg-type]
        assert result.return_direct is False


class TestConcurrency:
    DURATIONS = (0.06, 0.01, 0.04, 0.0)

    def ordered_reply(self, name: str) -> ChatResponse:
        return reply(
            *(call(name, f'{{"seconds": {s}, "label": "r{i}"}}', id=f"c{i}") for i, s in enumerate(self.DURATIONS))
        )

    def test_results_keep_the_reply_order_whatever_the_durations_sync(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([sleepy]), self.ordered_reply("sleepy"))
        assert results(result) == [(f"c{i}", f"r{i}", False) for i in range(4)]

    async def test_results_keep_the_reply_order_whatever_the_durations_async(self) -> None:
        result = await MANAGER.aexecute_tool_calls(prompt([asleepy]), self.ordered_reply("asleepy"))
        assert results(result) == [(f"c{i}", f"r{i}", False) for i in range(4)]

    @staticmethod
    def four_sleeps(*names: str) -> ChatResponse:
        return reply(*(call(name, f'{{"seconds": 0.05, "label": "{i}"}}', id=f"c{i}") for i, name in enumerate(names)))

    def timed_sync(self, response: ChatResponse) -> float:
        start = time.perf_counter()
        result = MANAGER.execute_tool_calls(prompt([sleepy, asleepy]), response)
        elapsed = time.perf_counter() - start
        assert [r.response_data for r in result.tool_responses] == ["0", "1", "2", "3"]
        return elapsed

    def test_four_sync_tools_of_50ms_finish_under_150ms_on_the_sync_path(self) -> None:
        assert self.timed_sync(self.four_sleeps("sleepy", "sleepy", "sleepy", "sleepy")) < 0.15

    def test_four_async_tools_of_50ms_finish_under_150ms_on_the_sync_path(self) -> None:
        assert self.timed_sync(self.four_sleeps("asleepy", "asleepy", "asleepy", "asleepy")) < 0.15

    def test_mixed_sync_and_async_tools_of_50ms_finish_under_150ms_on_the_sync_path(self) -> None:
        assert self.timed_sync(self.four_sleeps("sleepy", "asleepy", "sleepy", "asleepy")) < 0.15

    def test_sync_path_inside_a_running_loop_with_async_tools_finishes_under_150ms(self) -> None:
        async def main() -> float:
            return self.timed_sync(self.four_sleeps("asleepy", "asleepy", "sleepy", "asleepy"))

        assert asyncio.run(main()) < 0.15

    @pytest.mark.parametrize("name", ["sleepy", "asleepy"])
    async def test_four_tools_of_50ms_finish_under_150ms_on_the_async_path(self, name: str) -> None:
        start = time.perf_counter()
        result = await MANAGER.aexecute_tool_calls(prompt([sleepy, asleepy]), self.four_sleeps(*[name] * 4))
        assert time.perf_counter() - start < 0.15
        assert [r.response_data for r in result.tool_responses] == ["0", "1", "2", "3"]

    def test_a_single_sync_call_runs_in_the_calling_thread(self) -> None:
        result = MANAGER.execute_tool_calls(prompt([thread_name]), reply(call("thread_name")))
        assert result.tool_responses[0].response_data == threading.current_thread().name

    def test_an_injected_executor_runs_the_other_sync_calls(self) -> None:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="injected") as executor:
            manager = ToolCallingManager.builder().executor(executor).build()
            response = reply(call("thread_name", id="c1"), call("thread_name", id="c2"))
            result = manager.execute_tool_calls(prompt([thread_name]), response)
        first, second = (r.response_data for r in result.tool_responses)
        assert first == threading.current_thread().name
        assert second.startswith("injected")

    async def test_cancelling_the_async_path_cancels_the_running_tools(self) -> None:
        cancelled: list[str] = []

        @tool
        async def forever() -> str:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append("forever")
                raise
            return "never"

        task = asyncio.ensure_future(
            MANAGER.aexecute_tool_calls(prompt([forever]), reply(call("forever", id="a"), call("forever", id="b")))
        )
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cancelled == ["forever", "forever"]


def test_manager_serves_concurrent_requests_independently() -> None:
    manager = ToolCallingManager.builder().build()
    counter = FunctionToolCallback.builder("inc", lambda n: n + 1).build()

    def run(n: int) -> str:
        p = Prompt([UserMessage(str(n))], ToolCallingChatOptions(tool_callbacks=(counter,)))
        return manager.execute_tool_calls(p, reply(call("inc", f'{{"n": {n}}}'))).tool_responses[0].response_data

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(run, range(50))) == [str(n + 1) for n in range(50)]
