"""The spine: one stream pipeline, one turn across pause and resume, composable loop extensions,
async tool sources, single-use pending states. Each test here failed before the rework."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from advisors import ToolCallingAdvisor
from advisors.tool_calling import LoopState, ToolLoopExtension
from chatclient import (
    AdvisorOrder,
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatResponse,
    FinishReason,
    Generation,
    Message,
    PendingStateReusedError,
    ToolCall,
    ToolCallback,
    ToolCallDecision,
    ToolCallDecisionError,
    ToolCallDecisions,
    ToolCallingChatOptions,
    ToolResponseMessage,
    Usage,
    UserMessage,
    awaiting_decision,
    tool,
    turn_messages,
)
from chatclient.events import (
    ReasoningDelta,
    RoundFinished,
    TextDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolResultReady,
    TurnFinished,
    TurnPaused,
)
from chatclient.model import ChatModel
from chatclient.pending.state import InMemoryNonceLedger
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponseMetadata, GenerationMetadata
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import FunctionToolCallback, seal, unseal
from chatclient.turn import turn_of

USAGE = Usage(prompt_tokens=10, completion_tokens=5)


class Recorder(BaseAdvisor):
    """An advisor outside the loop (memory's place) that records what it is given."""

    order = AdvisorOrder.MEMORY

    def __init__(self) -> None:
        self.requests: list[ChatClientRequest] = []
        self.responses: list[ChatClientResponse] = []

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        self.requests.append(request)
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        self.responses.append(response)
        return response


class Flights:
    def __init__(self) -> None:
        self.status_runs = 0
        self.booked = 0

    @tool(description="Get the status of a flight")
    def flight_status(self, flight: str) -> str:
        self.status_runs += 1
        return f"{flight} is on time"

    @tool(description="Book a flight", requires_confirmation=True)
    def book(self, flight: str) -> str:
        self.booked += 1
        return f"Booked {flight}"


def _with_text_and_call(text: str, *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(text, tool_calls=calls)


# --------------------------------------------------------------------------- call and stream agree


@pytest.mark.parametrize("mode", MODES)
def test_an_advisor_outside_the_loop_gets_the_same_final_reply_in_every_mode(mode: str) -> None:
    flights = Flights()
    recorder = Recorder()
    model = ScriptedChatModel(
        [_with_text_and_call("Let me check.", tool_call("flight_status", {"flight": "VX205"})), "All good."]
    )
    client = ChatClient.builder(model).default_tools(flights).default_advisors(recorder).build()
    response, _ = run_spec(mode, client.prompt("Is VX205 on time?"))
    assert [r.text for r in recorder.responses] == ["All good."]
    assert response.text == "All good."


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_stream_content_shows_every_round_and_the_final_response_is_the_calls(mode: str) -> None:
    model = ScriptedChatModel(
        [_with_text_and_call("Let me check.", tool_call("flight_status", {"flight": "VX205"})), "All good."]
    )
    spec = ChatClient.builder(model).default_tools(Flights()).build().prompt("Is VX205 on time?")
    if mode == "stream":
        stream = spec.stream()
        text = "".join(stream.content())
        final = stream.response
    else:
        astream = spec.astream()

        async def collect() -> str:
            return "".join([t async for t in astream.content()])

        text = asyncio.run(collect())
        final = astream.response
    assert text == "Let me check.All good."
    assert final.text == "All good."


# --------------------------------------------------------------------------- metadata survives


THINKING: Any = [{"type": "thinking", "thinking": "Check the flight first.", "signature": "sig-123"}]


class ThinkingModel(ChatModel):
    """Streams like a provider: reasoning deltas, text deltas, call fragments, then a closing chunk
    that carries the replayable thinking block in the message metadata."""

    def __init__(self) -> None:
        self.prompts: list[Prompt] = []

    def _reply(self, prompt: Prompt) -> ChatResponse:
        first = len(self.prompts) == 1
        call = ToolCall(id="t1", name="flight_status", arguments='{"flight":"VX205"}')
        message = AssistantMessage(
            "Checking." if first else "On time.",
            tool_calls=(call,) if first else (),
            metadata={"anthropic_thinking_blocks": THINKING, "refusal": None},
        )
        reason = FinishReason.TOOL_CALLS if first else FinishReason.STOP
        return ChatResponse(
            [Generation(message, GenerationMetadata(finish_reason=reason))],
            ChatResponseMetadata(id=f"r{len(self.prompts)}", model="m", usage=USAGE),
        )

    def call(self, prompt: Prompt) -> ChatResponse:
        self.prompts.append(prompt)
        return self._reply(prompt)

    def stream(self, prompt: Prompt) -> Any:
        self.prompts.append(prompt)
        reply = self._reply(prompt)
        output = reply.generations[0].output
        yield ReasoningDelta("Check the flight first.")
        yield TextDelta(output.text or "")
        for call in output.tool_calls:
            yield ToolCallStarted(call.id, call.name)
            yield ToolCallDelta(call.id, call.arguments[:5])
            yield ToolCallDelta(call.id, call.arguments[5:])
        closing = AssistantMessage(None, metadata=output.metadata)
        yield ChatResponse([Generation(closing, reply.generations[0].metadata)], reply.metadata)

    async def astream(self, prompt: Prompt) -> Any:
        for event in self.stream(prompt):
            yield event


@pytest.mark.parametrize("mode", MODES)
def test_message_metadata_reaches_the_caller_and_the_next_round_in_every_mode(mode: str) -> None:
    model = ThinkingModel()
    client = ChatClient.builder(model).default_tools(Flights()).build()
    response, _ = run_spec(mode, client.prompt("Is VX205 on time?"))
    chat = response.chat_response
    assert chat is not None and chat.result is not None
    assert chat.result.output.metadata["anthropic_thinking_blocks"] == THINKING
    sent_back = model.prompts[1].messages[1]
    assert isinstance(sent_back, AssistantMessage)
    assert sent_back.metadata["anthropic_thinking_blocks"] == THINKING, "the thinking turn can be sent back"
    assert sent_back.tool_calls[0].arguments == '{"flight":"VX205"}'
    assert chat.usage == USAGE + USAGE


def test_reasoning_deltas_reach_events() -> None:
    stream = ChatClient.builder(ThinkingModel()).default_tools(Flights()).build().prompt("hi").stream()
    events = list(stream.events())
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Check the flight first."] * 2


# --------------------------------------------------------------------------- the event sequence


def test_the_event_sequence_of_a_tool_round_a_pause_and_a_resume_is_exact() -> None:
    flights = Flights()
    model = ScriptedChatModel(
        [
            _with_text_and_call("Ok.", tool_call("flight_status", {"flight": "VX205"}, id="s1")),
            AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")]),
            "Booked.",
        ],
        text_chunk_size=100,
        argument_chunks=1,
    )
    client = ChatClient.builder(model).default_tools(flights).build()
    stream = client.prompt("Check and book VX205").stream()
    events = list(stream.events())
    pending = awaiting_decision(stream.response)
    assert pending is not None
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "TextDelta",
        "ToolCallStarted",
        "ToolCallDelta",
        "RoundFinished",
        "ToolCallReady",
        "ToolResultReady",
        "ToolCallStarted",
        "ToolCallDelta",
        "RoundFinished",
        "ToolCallReady",
        "TurnPaused",
        "TurnFinished",
    ]
    assert isinstance(events[3], RoundFinished) and events[3].round == 1
    assert events[3].finish_reason is FinishReason.TOOL_CALLS
    ready = events[4]
    assert isinstance(ready, ToolCallReady) and (ready.id, ready.name, ready.arguments) == (
        "s1",
        "flight_status",
        '{"flight": "VX205"}',
    )
    result = events[5]
    assert isinstance(result, ToolResultReady) and (result.id, result.result, result.is_error) == (
        "s1",
        "VX205 is on time",
        False,
    )
    paused = events[10]
    assert isinstance(paused, TurnPaused) and paused.pending.awaiting_ids == ["b1"]
    assert isinstance(events[-1], TurnFinished) and events[-1].response.is_paused
    assert flights.booked == 0

    resume = client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1"))).stream()
    resumed = list(resume.events())
    assert [type(e).__name__ for e in resumed] == ["ToolResultReady", "TextDelta", "RoundFinished", "TurnFinished"]
    assert isinstance(resumed[0], ToolResultReady) and resumed[0].result == "Booked VX205"
    assert isinstance(resumed[2], RoundFinished) and resumed[2].round == 3, "the resumed turn counts on"
    assert resume.response.text == "Booked."
    assert flights.booked == 1


# --------------------------------------------------------------------------- one turn across pause and resume


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_and_resumed_turn_is_one_turn_with_every_round(mode: str) -> None:
    flights = Flights()
    recorder = Recorder()
    model = ScriptedChatModel(
        [
            AssistantMessage(None, tool_calls=[tool_call("flight_status", {"flight": "VX205"}, id="s1")]),
            AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")]),
            "Booked.",
        ]
    )
    client = ChatClient.builder(model).default_tools(flights).default_advisors(recorder).build()
    history: list[Message] = [UserMessage("earlier"), AssistantMessage("earlier answer")]
    paused, _ = run_spec(mode, client.prompt().messages(history).user("Check and book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None and paused.is_paused
    chat = paused.chat_response
    assert chat is not None and chat.result is not None
    assert chat.result.finish_reason is FinishReason.AWAITING_DECISION, "a paused reply says so at a glance"
    paused_turn = turn_of(paused)
    assert paused_turn is not None and paused_turn.paused

    resumed, _ = run_spec(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1"))))
    turn = turn_of(resumed)
    assert turn is not None and paused_turn.id == turn.id, "the same turn, with the same id"
    messages = turn_messages(resumed)
    assert messages[0] == UserMessage("Check and book VX205")
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]
    assert messages[-1].text == "Booked."  # type: ignore[union-attr]
    assert turn.rounds == 3
    # The advisor outside the loop sees the prompt the turn began with, not the stored conversation.
    assert recorder.requests[1].prompt.messages == recorder.requests[0].prompt.messages
    assert (flights.status_runs, flights.booked) == (1, 1)


def _turn_kinds(response: ChatClientResponse) -> list[str]:
    return [type(m).__name__ for m in turn_messages(response)]


@pytest.mark.parametrize("mode", MODES)
def test_turn_messages_of_a_plain_turn_a_tool_turn_return_direct_and_limits(mode: str) -> None:
    plain = ChatClient.create(ScriptedChatModel(["Hi."]))
    response, _ = run_spec(mode, plain.prompt().system("Be brief.").user("Hello"))
    assert turn_messages(response) == (UserMessage("Hello"), AssistantMessage("Hi."))

    flights = Flights()
    tools = ChatClient.builder(
        ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("flight_status", {"flight": "A1"})]), "Ok."])
    ).default_tools(flights)
    response, _ = run_spec(mode, tools.build().prompt("Status?"))
    assert _turn_kinds(response) == ["UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]

    @tool(return_direct=True)
    def lookup(code: str) -> str:
        """Look a code up."""
        return f"code {code}"

    direct = ChatClient.builder(
        ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("lookup", {"code": "x"})])])
    ).default_tools(lookup)
    response, _ = run_spec(mode, direct.build().prompt("Look x up"))
    assert response.text == "code x"
    assert _turn_kinds(response) == ["UserMessage", "AssistantMessage", "ToolResponseMessage"]

    looping = [AssistantMessage(None, tool_calls=[tool_call("flight_status", {"flight": "A1"})])] * 4
    limited = ChatClient.builder(ScriptedChatModel([*looping, "Stopped."])).default_tools(Flights())
    response, _ = run_spec(mode, limited.build().prompt("Loop"))
    kinds = _turn_kinds(response)
    assert kinds[0] == "UserMessage" and kinds[-1] == "AssistantMessage"
    assert response.text == "Stopped."
    chat = response.chat_response
    assert chat is not None and "tool_call_limit_exceeded" in chat.metadata.extra


@pytest.mark.parametrize("mode", MODES)
def test_turn_messages_of_a_turn_paused_denied_and_answered(mode: str) -> None:
    flights = Flights()
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")]), "Not booked."]
    )
    client = ChatClient.builder(model).default_tools(flights).build()
    paused, _ = run_spec(mode, client.prompt("Book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None
    assert _turn_kinds(paused) == ["UserMessage", "AssistantMessage"]
    decisions = ToolCallDecisions.of(ToolCallDecision.deny("b1", "No.", approver="ana"))
    answered, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    messages = turn_messages(answered)
    assert _turn_kinds(answered) == ["UserMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage"]
    result = messages[2]
    assert isinstance(result, ToolResponseMessage) and result.responses[0].response_data == "No."
    assert flights.booked == 0


# --------------------------------------------------------------------------- resume applies the round's tools


class AddsAToolEachRound(ToolLoopExtension):
    """An extension that offers a tool the client does not have (as tool search does)."""

    def __init__(self, callback: ToolCallback) -> None:
        self.callback = callback
        self.before_calls = 0

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.before_calls += 1
        options = request.prompt.options
        assert isinstance(options, ToolCallingChatOptions)
        if self.callback in options.tool_callbacks:
            return request
        grown = options.model_copy(update={"tool_callbacks": (*options.tool_callbacks, self.callback)})
        return request.with_prompt(request.prompt.with_options(grown))


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_an_extension_added_in_the_paused_round_runs_on_resume(mode: str) -> None:
    runs: list[str] = []

    def transfer(amount: int) -> str:
        runs.append(f"{amount}")
        return f"sent {amount}"

    callback = FunctionToolCallback.builder("transfer", transfer).requires_confirmation(True).build()
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("transfer", {"amount": 5}, id="x1")]), "Sent."]
    )
    client = ChatClient.builder(model).default_tool_loop_extensions(AddsAToolEachRound(callback)).build()
    paused, _ = run_spec(mode, client.prompt("Send 5"))
    pending = awaiting_decision(paused)
    assert pending is not None
    resumed, _ = run_spec(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("x1"))))
    assert runs == ["5"], "not 'Unknown tool': the resume ran against the paused round's tools"
    assert resumed.text == "Sent."


# --------------------------------------------------------------------------- composable extensions


class Tracing(ToolLoopExtension):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def do_initialize_loop(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.log.append(f"{self.name}.init")
        return request

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.log.append(f"{self.name}.before{state.round}")
        return request

    def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        self.log.append(f"{self.name}.after{state.round}")
        return response

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        self.log.append(f"{self.name}.final")
        return response


class AsyncArgumentAugmenter(ToolLoopExtension):
    """An async hook: adds a note to every round's messages before they are sent."""

    async def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        await asyncio.sleep(0)
        note = UserMessage(f"(round {state.round})")
        return request.with_prompt(request.prompt.with_messages([*request.prompt.messages, note]))

    async def do_get_next_instructions(self, request: ChatClientRequest, result: Any, state: LoopState) -> Any:
        await asyncio.sleep(0)
        return result.conversation_history


class Subclassed(ToolCallingAdvisor):
    def __init__(self, log: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        self.log.append(f"sub.before{state.round}")
        return request


@pytest.mark.parametrize("mode", MODES)
def test_several_sync_and_async_extensions_compose_in_the_documented_order(mode: str) -> None:
    log: list[str] = []
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("flight_status", {"flight": "A1"})]), "Done."]
    )
    advisor = Subclassed(log, extensions=[Tracing("a", log), AsyncArgumentAugmenter()])
    client = ChatClient.builder(model).default_tools(Flights()).default_advisors(advisor).build()
    response, _ = run_spec(mode, client.prompt("Go").tool_loop_extensions(Tracing("b", log)))
    assert response.text == "Done."
    assert log == [
        "a.init",
        "b.init",
        "sub.before1",
        "a.before1",
        "b.before1",
        "b.after1",
        "a.after1",
        "sub.before2",
        "a.before2",
        "b.before2",
        "b.after2",
        "a.after2",
        "b.final",
        "a.final",
    ]
    assert model.prompts[0].messages[-1] == UserMessage("(round 1)")
    assert model.prompts[1].messages[-1] == UserMessage("(round 2)")


# --------------------------------------------------------------------------- async tool sources


class AsyncSource:
    """A remote source (as MCP's list_tools): async, asked once per request."""

    def __init__(self) -> None:
        self.asked = 0
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def tool_callbacks(self) -> Sequence[ToolCallback]:
        self.asked += 1
        self.loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)

        async def remote_echo(text: str) -> str:
            return f"echo {text}"

        return [FunctionToolCallback.builder("remote_echo", remote_echo).description("Echo").build()]


@pytest.mark.parametrize("mode", MODES)
def test_an_async_tool_source_is_asked_once_per_request_and_serves_every_round(mode: str) -> None:
    source = AsyncSource()
    model = ScriptedChatModel(
        [
            AssistantMessage(None, tool_calls=[tool_call("remote_echo", {"text": "a"})]),
            AssistantMessage(None, tool_calls=[tool_call("remote_echo", {"text": "b"})]),
            "Both echoed.",
        ]
    )
    client = ChatClient.builder(model).default_tools(source).build()
    response, _ = run_spec(mode, client.prompt("Echo twice"))
    assert response.text == "Both echoed."
    assert source.asked == 1, "resolved once per request, the same set for every round"
    results = [m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)]
    assert [r.responses[0].response_data for r in results] == ["echo a", "echo b"]


def test_a_sync_tool_source_on_the_async_path_never_blocks_the_event_loop() -> None:
    release = threading.Event()
    seen: list[str] = []

    class SlowSource:
        def tool_callbacks(self) -> Sequence[ToolCallback]:
            seen.append(threading.current_thread().name)
            assert release.wait(10), "the event loop was blocked: the releasing task never ran"
            return []

    async def main() -> str | None:
        client = ChatClient.builder(ScriptedChatModel(["ok"])).default_tools(SlowSource()).build()
        call = asyncio.ensure_future(client.prompt("hi").acall().content())
        await asyncio.sleep(0)
        while not seen:
            await asyncio.sleep(0.001)  # the source is running, and the loop still runs this task
        release.set()
        return await call

    assert asyncio.run(main()) == "ok"
    assert seen and seen[0] != threading.main_thread().name


def test_static_tools_are_resolved_once_per_spec_and_providers_once_per_request() -> None:
    source = AsyncSource()
    flights = Flights()
    client = ChatClient.builder(ScriptedChatModel(["a", "b", "c"])).default_tools(flights).build()
    spec = client.prompt("hi").tools(source)
    defaults = client.prompt().tool_callbacks
    assert spec.tool_callbacks is defaults, "the client's tools were resolved once, when it was built"
    for _ in range(3):
        spec.call().content()
    assert source.asked == 3


# --------------------------------------------------------------------------- tools defined inside a function


def test_a_tool_defined_in_a_function_resolves_names_bound_there() -> None:
    from chatclient import ToolContext as LocalContext

    @tool
    def whoami(context: LocalContext) -> str:
        """Who is asking."""
        return str(context.get("user"))

    @dataclass
    class Local:
        note: str

    @tool
    def takes_local(flag: bool, extra: Local | None = None) -> str:
        """Uses a class defined in the function."""
        return str(flag)

    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("whoami", {}), tool_call("takes_local", {"flag": True})]), "ok"]
    )
    client = ChatClient.builder(model).default_tools(whoami).build()
    response = client.prompt("who").tools(takes_local).tool_context(user="ana").call().chat_client_response()
    results = next(m for m in turn_messages(response) if isinstance(m, ToolResponseMessage))
    assert [r.response_data for r in results.responses] == ["ana", "True"]


# --------------------------------------------------------------------------- single use


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_state_cannot_be_resumed_twice(mode: str) -> None:
    flights = Flights()
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")]), "Booked.", "Again."]
    )
    client = ChatClient.builder(model).default_tools(flights).build()
    paused, _ = run_spec(mode, client.prompt("Book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    run_spec(mode, client.prompt().resume(pending, allow))
    with pytest.raises(PendingStateReusedError):
        run_spec(mode, client.prompt().resume(pending, allow))
    assert flights.booked == 1


def test_a_sealed_state_is_redeemed_once_and_invalid_decisions_do_not_burn_it() -> None:
    flights = Flights()
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")]), "Booked."]
    )
    ledger = InMemoryNonceLedger()
    client = (
        ChatClient.builder(model)
        .default_tools(flights)
        .tool_calling_advisor(ToolCallingAdvisor(nonce_ledger=ledger))
        .build()
    )
    pending = awaiting_decision(client.prompt("Book VX205").call().chat_client_response())
    assert pending is not None
    secret = b"0123456789abcdef0123"
    token = seal(pending, secret)
    with pytest.raises(ToolCallDecisionError):
        client.prompt().resume(unseal(token, secret), ToolCallDecisions.of(ToolCallDecision.allow("nope"))).call()\
            .content()  # fmt: skip
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    assert client.prompt().resume(unseal(token, secret), allow).call().content() == "Booked."
    with pytest.raises(PendingStateReusedError):
        client.prompt().resume(unseal(token, secret), allow).call().content()
    assert flights.booked == 1
    assert len(ledger) == 1


# --------------------------------------------------------------------------- a stream's final response


def test_a_consumed_stream_keeps_its_final_response_and_an_unconsumed_one_says_so() -> None:
    stream = ChatClient.create(ScriptedChatModel(["Hello there."])).prompt("hi").stream()
    with pytest.raises(Exception, match="not been consumed"):
        _ = stream.response
    assert "".join(stream.content()) == "Hello there."
    assert stream.response.text == "Hello there."
    assert turn_messages(stream.response)[-1] == AssistantMessage("Hello there.")


def test_chat_response_chunks_accumulate_to_the_final_reply() -> None:
    from chatclient.streaming import ChatResponseAccumulator

    model = ThinkingModel()
    model.prompts.append(Prompt("warm-up"))  # start at the final round: no tool call
    stream = ChatClient.create(model).prompt("hi").stream()
    accumulator = ChatResponseAccumulator()
    for chunk in stream.chat_response():
        accumulator.add(chunk)
    built = accumulator.build()
    final = stream.response.chat_response
    assert final is not None
    assert built.text == final.text == "On time."
    assert built.result is not None and final.result is not None
    assert built.result.output.metadata == final.result.output.metadata
    assert built.usage == final.usage
