"""The tool loop (ToolCallingAdvisor) through the client, in call, stream, acall and astream."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from advisors import LoopState, ToolCallingAdvisor
from chatclient import (
    AdvisorOrder,
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatResponse,
    FinishReason,
    Prompt,
    ToolCallingChatOptions,
    ToolCallLimitExceededError,
    ToolResponseMessage,
    Usage,
    UserMessage,
    tool,
)
from chatclient.errors import TurnInterruptedError
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, check_advisor, run_in_mode, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallingManager, ToolCallLimitPolicy
from chatclient.turn import turn_of
from tests.conftest import Counters, Rendezvous

USAGE = Usage(prompt_tokens=10, completion_tokens=5)


def two_tool_script() -> list[ScriptItem]:
    return [
        AssistantMessage(
            None,
            tool_calls=[
                tool_call("get_weather", {"city": "Beijing"}, id="c1"),
                tool_call("query_sales", {"period": "Q3"}, id="c2"),
            ],
        ),
        "Sunny in Beijing; Q3 sales were 1,250,000.",
    ]


def run(mode: str, client: ChatClient, user: str = "Weather and sales?") -> ChatClientResponse:
    return run_spec(mode, client.prompt(user))[0]


@pytest.mark.parametrize("mode", MODES)
def test_parallel_tool_calls_round_trip_in_every_mode(mode: str, counters: Counters) -> None:
    model = ScriptedChatModel(two_tool_script(), usage=USAGE)
    client = ChatClient.builder(model).default_tools(counters).build()
    response = run(mode, client)
    chat = response.chat_response
    assert chat is not None
    assert chat.text == "Sunny in Beijing; Q3 sales were 1,250,000."
    assert (counters.weather_calls, counters.sales_calls) == (1, 1)
    assert chat.usage == Usage(prompt_tokens=20, completion_tokens=10), "usage is summed over the rounds"
    assert chat.result is not None and chat.result.finish_reason is FinishReason.STOP
    second = model.prompts[1].messages
    assert second[0] == UserMessage("Weather and sales?")
    assert isinstance(second[1], AssistantMessage) and [c.id for c in second[1].tool_calls] == ["c1", "c2"]
    assert isinstance(second[2], ToolResponseMessage)
    assert [(r.id, r.response_data) for r in second[2].responses] == [
        ("c1", "Sunny in Beijing"),
        ("c2", '{"period":"Q3","amount":1250000}'),
    ]
    turn = turn_of(response)
    assert turn is not None and turn.rounds == 2
    assert turn.messages == (*second, chat.result.output), "the turn: user, calls, results, answer"


class HookRecorder(ToolCallingAdvisor):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[tuple[str, int]] = []

    def do_initialize_loop(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.calls.append(("initialize", state.round))
        return request

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.calls.append(("before", state.round))
        return request

    def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        self.calls.append(("after", state.round))
        return response

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        self.calls.append(("finalize", state.round))
        return response


@pytest.mark.parametrize("mode", MODES)
def test_hooks_are_called_in_order_with_the_round_count(mode: str, counters: Counters) -> None:
    advisor = HookRecorder()
    script: list[ScriptItem] = [
        AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": "A"})]),
        AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": "B"})]),
        "done",
    ]
    client = ChatClient.builder(ScriptedChatModel(script)).default_tools(counters).tool_calling_advisor(advisor).build()
    run(mode, client)
    assert advisor.calls == [
        ("initialize", 0),
        ("before", 1), ("after", 1),
        ("before", 2), ("after", 2),
        ("before", 3), ("after", 3),
        ("finalize", 3),
    ]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_do_after_call_runs_before_the_tool_decision_and_can_strip_calls(mode: str, counters: Counters) -> None:
    class Stripper(ToolCallingAdvisor):
        def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
            return response.with_chat_response(ChatResponse.of("stripped"))

    model = ScriptedChatModel(two_tool_script())
    client = ChatClient.builder(model).default_tools(counters).tool_calling_advisor(Stripper()).build()
    response = run(mode, client)
    assert response.chat_response is not None and response.chat_response.text == "stripped"
    assert (counters.weather_calls, model.calls) == (0, 1)


@pytest.mark.parametrize("mode", MODES)
def test_do_before_call_can_change_the_tools_and_they_run_that_round(mode: str) -> None:
    ran: list[str] = []

    @tool
    def secret(x: int) -> int:
        """Injected by the hook."""
        ran.append("secret")
        return x * 2

    class Injector(ToolCallingAdvisor):
        def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
            options = request.prompt.options
            assert isinstance(options, ToolCallingChatOptions)
            injected = options.mutate().tool_callbacks(secret).build()
            return request.with_prompt(request.prompt.with_options(injected))

    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("secret", {"x": 21})]), "42"])
    client = ChatClient.builder(model).tool_calling_advisor(Injector()).build()
    assert run(mode, client).chat_response is not None
    assert ran == ["secret"]
    responses = model.prompts[1].messages[-1]
    assert isinstance(responses, ToolResponseMessage) and responses.responses[0].response_data == "42"


@pytest.mark.parametrize("mode", MODES)
def test_return_direct_ends_the_loop_with_the_tool_result(mode: str) -> None:
    @tool(return_direct=True)
    def final_report(region: str) -> str:
        """The report is the answer."""
        return f"Report for {region}"

    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("final_report", {"region": "EU"})])])
    client = ChatClient.builder(model).default_tools(final_report).build()
    chat = run(mode, client).chat_response
    assert chat is not None and chat.text == "Report for EU"
    assert chat.result is not None and chat.result.finish_reason is FinishReason.RETURN_DIRECT
    assert model.calls == 1


def looping_script(prompt: Prompt) -> AssistantMessage | str:
    """A model that asks for the weather again and again, unless told not to use tools."""
    options = prompt.options
    if isinstance(options, ToolCallingChatOptions) and options.tool_choice == "none":
        return "Here is what I found."
    return AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": f"C{len(prompt.messages)}"})])


@pytest.mark.parametrize("mode", MODES)
def test_limit_breach_gets_one_last_tool_less_round_by_default(mode: str, counters: Counters) -> None:
    manager = ToolCallingManager.builder().max_calls_per_tool(2).build()
    model = ScriptedChatModel(looping_script)
    client = ChatClient.builder(model).default_tools(counters).tool_calling_advisor(ToolCallingAdvisor(manager)).build()
    chat = run(mode, client).chat_response
    assert chat is not None and chat.text == "Here is what I found."
    assert counters.weather_calls == 2
    assert "Tool call limit (2) exceeded for tool 'get_weather'" in str(chat.metadata.extra["tool_call_limit_exceeded"])
    last = model.prompts[-1]
    assert isinstance(last.options, ToolCallingChatOptions) and last.options.tool_choice == "none"
    assert [c.name for c in last.options.tool_callbacks] == ["get_weather", "query_sales"]
    assert model.calls == 4


@pytest.mark.parametrize("mode", MODES)
def test_a_model_that_ignores_the_last_round_still_ends_the_loop(mode: str, counters: Counters) -> None:
    manager = ToolCallingManager.builder().max_total_tool_calls(1).build()
    call = lambda prompt: AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": "X"})])  # noqa: E731
    model = ScriptedChatModel(call)
    client = ChatClient.builder(model).default_tools(counters).tool_calling_advisor(ToolCallingAdvisor(manager)).build()
    chat = run(mode, client).chat_response
    assert chat is not None and not chat.has_tool_calls
    assert chat.result is not None and chat.result.finish_reason is FinishReason.TOOL_CALL_LIMIT
    assert chat.text is not None and "Total tool call limit (1)" in chat.text
    assert model.calls == 3


@pytest.mark.parametrize("mode", MODES)
def test_limit_policy_raise_stops_before_the_breaching_call_runs(mode: str, counters: Counters) -> None:
    manager = ToolCallingManager.builder().max_identical_calls(1).on_limit_exceeded(ToolCallLimitPolicy.RAISE).build()
    same = lambda prompt: AssistantMessage(None, tool_calls=[tool_call("get_weather", {"city": "Same"})])  # noqa: E731
    client = (
        ChatClient.builder(ScriptedChatModel(same))
        .default_tools(counters)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .build()
    )
    with pytest.raises(ToolCallLimitExceededError) as error:
        run(mode, client)
    assert error.value.kind == "identical"
    assert counters.weather_calls == 1


@pytest.mark.parametrize("mode", MODES)
def test_errors_go_back_to_the_model_and_the_loop_continues(mode: str, counters: Counters) -> None:
    script: list[ScriptItem] = [
        AssistantMessage(
            None,
            tool_calls=[
                tool_call("no_such_tool", {}, id="u"),
                tool_call("get_weather", '{"city": ', id="m"),
                tool_call("get_weather", {"town": "x"}, id="v"),
            ],
        ),
        "recovered",
    ]
    model = ScriptedChatModel(script)
    client = ChatClient.builder(model).default_tools(counters).build()
    assert run(mode, client).chat_response is not None
    results = model.prompts[1].messages[-1]
    assert isinstance(results, ToolResponseMessage)
    unknown, malformed, invalid = results.responses
    assert all(r.is_error for r in results.responses)
    assert "no_such_tool" in unknown.response_data and "get_weather" in unknown.response_data
    assert "JSON" in malformed.response_data
    assert "city" in invalid.response_data
    assert counters.weather_calls == 0


@pytest.mark.parametrize("mode", MODES)
def test_advisors_inside_the_loop_see_every_round_and_outside_see_one(mode: str, counters: Counters) -> None:
    seen: dict[str, int] = {"inside": 0, "outside": 0}

    class Count(BaseAdvisor):
        def __init__(self, key: str, order: int) -> None:
            self.key, self.order = key, order

        def before(self, request: ChatClientRequest) -> ChatClientRequest:
            seen[self.key] += 1
            return request

    client = (
        ChatClient.builder(ScriptedChatModel(two_tool_script()))
        .default_tools(counters)
        .default_advisors(Count("inside", AdvisorOrder.TOOL_CALLING + 1), Count("outside", AdvisorOrder.MEMORY))
        .build()
    )
    run(mode, client)
    assert seen == {"inside": 2, "outside": 1}


def test_the_loop_behaves_the_same_in_all_four_modes(counters: Counters) -> None:
    runs = check_advisor(list, two_tool_script(), tools=[counters])
    assert {r.text for r in runs.values()} == {"Sunny in Beijing; Q3 sales were 1,250,000."}
    assert counters.weather_calls == 4


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_streamed_tool_call_arguments_are_assembled_before_the_tool_runs(mode: str) -> None:
    received: list[dict[str, Any]] = []

    @tool
    def record(payload: dict[str, Any], note: str) -> str:
        """Keep what arrived."""
        received.append({"payload": payload, "note": note})
        return "kept"

    arguments = {"payload": {"items": list(range(20)), "nested": {"k": "v" * 30}}, "note": "split me"}
    script: list[ScriptItem] = [AssistantMessage(None, tool_calls=[tool_call("record", arguments)]), "ok"]
    result = run_in_mode(mode, [], script, tools=[record])
    assert received == [arguments]
    assert result.text == "ok"


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_text_deltas_reach_the_caller_before_the_round_ends(mode: str) -> None:
    seen_by_tool: list[list[str]] = []
    delivered: list[str] = []

    @tool
    def check() -> str:
        """Record what the caller had received when the tool ran."""
        seen_by_tool.append(list(delivered))
        return "ok"

    script: list[ScriptItem] = [
        AssistantMessage("Let me check that for you.", tool_calls=[tool_call("check")]),
        "All good.",
    ]
    client = ChatClient.builder(ScriptedChatModel(script, text_chunk_size=5)).default_tools(check).build()
    spec = client.prompt("go")
    if mode == "stream":
        for delta in spec.stream().content():
            delivered.append(delta)
    else:

        async def consume() -> None:
            async for delta in spec.astream().content():
                delivered.append(delta)

        asyncio.run(consume())
    assert "".join(seen_by_tool[0]) == "Let me check that for you."
    assert len(seen_by_tool[0]) > 3, "text arrived delta by delta, not in one piece"
    assert "".join(delivered) == "Let me check that for you.All good."


def test_a_model_error_propagates_and_no_more_rounds_run(counters: Counters) -> None:
    boom = RuntimeError("provider down")
    model = ScriptedChatModel([two_tool_script()[0], boom])
    client = ChatClient.builder(model).default_tools(counters).build()
    with pytest.raises(TurnInterruptedError) as raised:  # tools ran: wrapped, with the turn's continuation
        client.prompt("x").call().content()
    assert raised.value.__cause__ is boom
    assert raised.value.continuation is not None
    assert counters.weather_calls == 1


def sleepy_tools() -> tuple[Callable[..., Any], ...]:
    @tool
    def slow_a(n: int) -> int:
        """Blocks 50 ms."""
        time.sleep(0.05)
        return n

    @tool
    def slow_b(n: int) -> int:
        """Blocks 50 ms."""
        time.sleep(0.05)
        return n

    @tool
    async def slow_c(n: int) -> int:
        """Awaits 50 ms."""
        await asyncio.sleep(0.05)
        return n

    @tool
    async def slow_d(n: int) -> int:
        """Awaits 50 ms."""
        await asyncio.sleep(0.05)
        return n

    return slow_a, slow_b, slow_c, slow_d


FOUR_CALLS = AssistantMessage(
    None, tool_calls=[tool_call(name, {"n": i}) for i, name in enumerate(["slow_a", "slow_b", "slow_c", "slow_d"])]
)


@pytest.mark.parametrize("mode", MODES)
def test_four_tools_in_one_reply_run_concurrently_sync_and_async(mode: str) -> None:
    """Each tool waits until all four are running: calls run one after another never all arrive."""
    together = Rendezvous(4)
    model = ScriptedChatModel([FOUR_CALLS, "done"])
    client = ChatClient.builder(model).default_tools(*meeting_tools(together)).build()
    run(mode, client)
    results = model.prompts[1].messages[-1]
    assert isinstance(results, ToolResponseMessage)
    assert [r.response_data for r in results.responses] == ["0", "1", "2", "3"], "results keep the reply's order"
    assert together.overlap, "the four tools of one reply did not run at the same time"


def meeting_tools(together: Rendezvous) -> tuple[Callable[..., Any], ...]:
    @tool
    def slow_a(n: int) -> int:
        """Waits for the others."""
        together.wait()
        return n

    @tool
    def slow_b(n: int) -> int:
        """Waits for the others."""
        together.wait()
        return n

    @tool
    async def slow_c(n: int) -> int:
        """Waits for the others."""
        await together.await_all()
        return n

    @tool
    async def slow_d(n: int) -> int:
        """Waits for the others."""
        await together.await_all()
        return n

    return slow_a, slow_b, slow_c, slow_d


def test_sync_call_works_inside_a_running_event_loop_like_jupyter() -> None:
    main_thread = threading.current_thread().name

    async def notebook_cell() -> str | None:
        model = ScriptedChatModel([FOUR_CALLS, "done"])
        client = ChatClient.builder(model).default_tools(*sleepy_tools()).build()
        return client.prompt("inside a loop").call().content()

    assert asyncio.run(notebook_cell()) == "done"
    assert threading.current_thread().name == main_thread


def test_sync_stream_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> str:
        model = ScriptedChatModel([FOUR_CALLS, "streamed answer"])
        client = ChatClient.builder(model).default_tools(*sleepy_tools()).build()
        return "".join(client.prompt("go").stream().content())

    assert asyncio.run(notebook_cell()) == "streamed answer"


def test_a_plain_sync_call_stays_on_the_callers_thread_without_an_event_loop() -> None:
    """No thread hop and no event loop per call: the model and a lone tool call run right here."""
    seen: list[tuple[str, bool]] = []

    def on_thread() -> tuple[str, bool]:
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        return threading.current_thread().name, running

    @tool
    def where() -> str:
        """Report the thread."""
        seen.append(on_thread())
        return "here"

    def model_reply(prompt: Prompt) -> ScriptItem:
        seen.append(on_thread())
        if isinstance(prompt.messages[-1], ToolResponseMessage):
            return "done"
        return AssistantMessage(None, tool_calls=[tool_call("where")])

    client = ChatClient.builder(ScriptedChatModel(model_reply)).default_tools(where).build()
    assert client.prompt("go").call().content() == "done"
    assert seen == [(threading.current_thread().name, False)] * 3


def test_a_blocking_sync_tool_never_stalls_the_event_loop() -> None:
    """The tool blocks until another task of the same loop releases it: on the loop's thread it
    would wait forever (here: until the patience runs out, and the test fails)."""
    release = threading.Event()
    blocked_on_loop: list[bool] = []

    @tool
    def waits_for_the_loop() -> str:
        """Blocks until released."""
        try:
            asyncio.get_running_loop()
            blocked_on_loop.append(True)
        except RuntimeError:
            blocked_on_loop.append(False)
        return "released" if release.wait(10) else "never released"

    async def main() -> str | None:
        model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("waits_for_the_loop", {})]), "done"])
        client = ChatClient.builder(model).default_tools(waits_for_the_loop).build()
        reply = asyncio.ensure_future(client.prompt("go").acall().chat_client_response())
        while not blocked_on_loop:
            await asyncio.sleep(0.001)  # this task keeps running while the tool blocks
        release.set()
        await reply
        result = model.prompts[1].messages[-1]
        assert isinstance(result, ToolResponseMessage)
        return result.responses[0].response_data

    assert asyncio.run(main()) == "released"
    assert blocked_on_loop == [False], "the sync tool ran off the event loop's thread"
