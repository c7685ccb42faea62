"""ToolCallingManager: the history it builds, failures reported to the model, concurrency, return_direct.

Concurrency is proved without clocks: the calls of a batch meet at a barrier (or an ``asyncio`` gate)
that opens only once all of them are running, so a manager that ran them one by one fails the test.
"""

from __future__ import annotations

import asyncio
import threading
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
        raised = threading.Event()

        @tool
        def fatal() -> str:
            raised.set()
            raise ValueError("fatal")

        @tool
        def slow_ok() -> str:
            """Finishes only after the other call has raised."""
            assert raised.wait(GUARD)
            finished.append("slow_ok")
            return "ok"

        manager = (
            ToolCallingManager.builder()
            .exception_processor(DefaultToolExceptionProcessor(rethrow=(ValueError,)))
            .build()
        )
        response = reply(call("fatal"), call("slow_ok"))
        with pytest.raises(ValueError, match="fatal"):
            manager.execute_tool_calls(prompt([fatal, slow_ok]), response)
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


GUARD = 10.0
"""Seconds a rendezvous waits before it gives up: a deadlock guard that fails a broken test, never a
measure of speed (a working run never waits for it)."""


class Rendezvous:
    """No call leaves before all ``parties`` have arrived: a batch passes only if its calls run at once.

    Sync tools wait on a ``threading.Barrier`` in their thread; async tools wait on it from a worker
    thread, so the event loop stays free for the other async calls of the batch.
    """

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=GUARD)

    def wait(self) -> None:
        self.barrier.wait()

    async def await_all(self) -> None:
        await asyncio.to_thread(self.barrier.wait)


@tool
def meet(label: str, context: ToolContext) -> str:
    context["rendezvous"].wait()
    return label


@tool
async def ameet(label: str, context: ToolContext) -> str:
    await context["rendezvous"].await_all()
    return label


@tool
async def ameet_on_the_loop(label: str, context: ToolContext) -> str:
    """Waits with an ``asyncio.Event`` only: the calls must be tasks of one loop, running at once."""
    gate: LoopGate = context["gate"]
    await gate.arrive()
    return label


class LoopGate:
    """Opens when ``parties`` coroutines have arrived; needs no thread, so it proves task concurrency."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.open = asyncio.Event()

    async def arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self.open.set()
        await asyncio.wait_for(self.open.wait(), GUARD)


class Relay:
    """Call ``i`` may finish only after call ``i + 1`` has: results complete in reverse reply order."""

    def __init__(self, n: int) -> None:
        self.done = [threading.Event() for _ in range(n)]

    def run(self, i: int) -> None:
        if i + 1 < len(self.done):
            assert self.done[i + 1].wait(GUARD), f"call {i + 1} never finished"
        self.done[i].set()


@tool
def relay(i: int, context: ToolContext) -> str:
    context["relay"].run(i)
    return f"r{i}"


@tool
async def arelay(i: int, context: ToolContext) -> str:
    await asyncio.to_thread(context["relay"].run, i)
    return f"r{i}"


class TestConcurrency:
    @staticmethod
    def batch(*names: str) -> ChatResponse:
        return reply(*(call(name, f'{{"label": "{i}"}}', id=f"c{i}") for i, name in enumerate(names)))

    @staticmethod
    def labels(result: ToolExecutionResult) -> list[str]:
        return [r.response_data for r in result.tool_responses]

    @staticmethod
    def meeting(parties: int) -> Prompt:
        return prompt([meet, ameet], context={"rendezvous": Rendezvous(parties)})

    @pytest.mark.parametrize("name", ["relay", "arelay"])
    def test_results_keep_the_reply_order_when_calls_finish_in_reverse_sync(self, name: str) -> None:
        response = reply(*(call(name, f'{{"i": {i}}}', id=f"c{i}") for i in range(4)))
        result = MANAGER.execute_tool_calls(prompt([relay, arelay], context={"relay": Relay(4)}), response)
        assert results(result) == [(f"c{i}", f"r{i}", False) for i in range(4)]

    @pytest.mark.parametrize("name", ["relay", "arelay"])
    async def test_results_keep_the_reply_order_when_calls_finish_in_reverse_async(self, name: str) -> None:
        response = reply(*(call(name, f'{{"i": {i}}}', id=f"c{i}") for i in range(4)))
        result = await MANAGER.aexecute_tool_calls(prompt([relay, arelay], context={"relay": Relay(4)}), response)
        assert results(result) == [(f"c{i}", f"r{i}", False) for i in range(4)]

    @pytest.mark.parametrize(
        "names",
        [("meet",) * 4, ("ameet",) * 4, ("meet", "ameet", "meet", "ameet")],
        ids=["sync-tools", "async-tools", "mixed"],
    )
    def test_all_calls_of_a_reply_run_at_once_on_the_sync_path(self, names: tuple[str, ...]) -> None:
        result = MANAGER.execute_tool_calls(self.meeting(4), self.batch(*names))
        assert self.labels(result) == ["0", "1", "2", "3"]

    def test_all_calls_run_at_once_on_the_sync_path_inside_a_running_loop(self) -> None:
        async def main() -> ToolExecutionResult:
            return MANAGER.execute_tool_calls(self.meeting(4), self.batch("ameet", "ameet", "meet", "ameet"))

        assert self.labels(asyncio.run(main())) == ["0", "1", "2", "3"]

    @pytest.mark.parametrize("name", ["meet", "ameet"])
    async def test_all_calls_of_a_reply_run_at_once_on_the_async_path(self, name: str) -> None:
        result = await MANAGER.aexecute_tool_calls(self.meeting(4), self.batch(*[name] * 4))
        assert self.labels(result) == ["0", "1", "2", "3"]

    async def test_async_tools_are_tasks_of_one_loop_on_the_async_path(self) -> None:
        p = prompt([ameet_on_the_loop], context={"gate": LoopGate(4)})
        result = await MANAGER.aexecute_tool_calls(p, self.batch(*["ameet_on_the_loop"] * 4))
        assert self.labels(result) == ["0", "1", "2", "3"]

    def test_async_tools_share_one_loop_on_the_sync_path(self) -> None:
        p = prompt([ameet_on_the_loop], context={"gate": LoopGate(4)})
        result = MANAGER.execute_tool_calls(p, self.batch(*["ameet_on_the_loop"] * 4))
        assert self.labels(result) == ["0", "1", "2", "3"]

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
        both_running = LoopGate(2)

        @tool
        async def forever() -> str:
            try:
                await both_running.arrive()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append("forever")
                raise
            return "never"

        task = asyncio.ensure_future(
            MANAGER.aexecute_tool_calls(prompt([forever]), reply(call("forever", id="a"), call("forever", id="b")))
        )
        await asyncio.wait_for(both_running.open.wait(), GUARD)
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


class TestToolContextIsReadOnly:
    """A call without context values gets the one shared empty context: nothing a tool does to it may
    reach another call, so its values are a read-only view."""

    def test_a_tool_cannot_write_into_the_context_the_next_call_gets(self) -> None:
        seen: list[dict[str, object]] = []

        @tool
        def scribble(context: ToolContext) -> str:
            seen.append(dict(context))
            with pytest.raises(TypeError):
                context.context["user"] = "mallory"  # type: ignore[index]
            return "ok"

        for _ in range(2):
            result = MANAGER.execute_tool_calls(prompt([scribble]), reply(call("scribble")))
            assert results(result) == [("call_scribble", "ok", False)]
        assert seen == [{}, {}]

    def test_values_are_read_through_the_view(self) -> None:
        context = ToolContext({"user": "ada"})
        assert context.context == {"user": "ada"}
        assert dict(context) == {"user": "ada"}
