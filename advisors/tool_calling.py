"""The tool loop as one advisor: model → tool calls → tools → next round, for every provider.

The loop is written once, as a generator *flow* (like httpx's ``Auth.auth_flow``): it yields what
it needs done, a model round or a batch of tool calls, and receives the result. Four small
drivers run it for call, stream, acall and astream, so the four modes cannot drift apart.

Subclasses customise the loop through the hooks (``do_initialize_loop``, ``do_before_call``,
``do_after_call``, ``do_finalize_loop``, ``do_get_next_instructions``); each receives the
:class:`LoopState` of the running turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from chatclient.advisor import (
    AdvisorOrder,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    ContextKeys,
    StreamNext,
    ToolAdvisor,
)
from chatclient.messages import AssistantMessage, Message
from chatclient.options import ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, FinishReason, Generation, GenerationMetadata, Usage
from chatclient.streaming import ChatResponseAccumulator
from chatclient.tools import ToolCallingManager, ToolExecutionResult
from chatclient.tools.confirmation import (
    AWAITING_IDS_METADATA_KEY,
    PENDING_METADATA_KEY,
    PendingToolCalls,
    ToolCallConfirmationRequired,
    ToolCallDecisions,
)

__all__ = ["LoopState", "ToolCallingAdvisor"]

T = TypeVar("T")


@dataclass
class LoopState:
    """What the loop knows about the running turn; hooks read it (and may keep notes in ``notes``)."""

    streaming: bool
    """True for ``stream()``/``astream()``."""
    round: int = 0
    """The current model round, from 1; 0 during ``do_initialize_loop``."""
    history: tuple[Message, ...] = ()
    """The full turn so far: the request's messages plus every tool-call message and tool result."""
    initial_length: int = 0
    usage: Usage = field(default_factory=Usage)
    """Usage summed over the rounds so far."""
    saw_usage: bool = False
    last_result: ToolExecutionResult | None = None
    limit_exceeded: str | None = None
    """Set when a tool-call limit was hit: the next round is the last one, without tools."""
    pending: PendingToolCalls | None = None
    """Set when the turn paused for confirmation: nothing of the paused reply has run."""
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def added_messages(self) -> tuple[Message, ...]:
        """Messages this turn added to the request's: tool-call messages and tool results."""
        return self.history[self.initial_length :]


@dataclass(frozen=True)
class _ModelRound:
    request: ChatClientRequest


@dataclass(frozen=True)
class _RunTools:
    prompt: Prompt
    response: ChatResponse
    decisions: ToolCallDecisions | None = None


_Step = Union[_ModelRound, _RunTools]  # noqa: UP007
_Flow = Generator[_Step, Any, ChatClientResponse]


class ToolCallingAdvisor(ToolAdvisor):
    """Runs the tool loop. Auto-registered once per chain; add your own instance (or a subclass) to
    the chain to replace it.

    Advisors with a lower order (memory) see one call per turn; advisors with a higher order sit
    inside the loop and see every round.
    """

    def __init__(
        self,
        tool_calling_manager: ToolCallingManager | None = None,
        *,
        order: int = AdvisorOrder.TOOL_CALLING,
        name: str = "ToolCallingAdvisor",
    ) -> None:
        if not AdvisorOrder.HIGHEST < order < AdvisorOrder.LOWEST:
            raise ValueError("the tool loop's order must lie strictly between HIGHEST and LOWEST")
        self.tool_calling_manager = tool_calling_manager or ToolCallingManager.builder().build()
        self._order = order
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def order(self) -> int:
        return self._order

    # ------------------------------------------------------------------ hooks (identity by default)

    def do_initialize_loop(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        """Once, before the first round."""
        return request

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        """Before each round; the request returned is sent, and its tools run that round's calls."""
        return request

    def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        """After each round's reply (aggregated when streaming), before the loop decides whether it
        is a tool call, so a subclass may alter or strip tool calls."""
        return response

    def do_get_next_instructions(
        self, request: ChatClientRequest, result: ToolExecutionResult, state: LoopState
    ) -> Sequence[Message]:
        """The messages the next round sends; by default the whole turn so far."""
        return result.conversation_history

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        """Once, after the last round."""
        return response

    # ------------------------------------------------------------------ the loop, written once

    def _flow(self, request: ChatClientRequest, state: LoopState) -> _Flow:
        request = self.do_initialize_loop(request, state)
        resume = request.context.get(ContextKeys.RESUME)
        if resume is not None:
            return (yield from self._resume(request, state, *resume))
        state.history = request.prompt.messages
        state.initial_length = len(state.history)
        return (yield from self._rounds(request, state, state.history))

    def _resume(
        self, request: ChatClientRequest, state: LoopState, pending: PendingToolCalls, decisions: ToolCallDecisions
    ) -> _Flow:
        """Run the decided calls of a paused reply first, then go on as after any tool round."""
        pending.verify()
        state.history = pending.history_before_reply()
        state.initial_length = len(state.history)
        paused = pending.paused_response()
        result: ToolExecutionResult = yield _RunTools(Prompt(state.history, request.prompt.options), paused, decisions)
        response = ChatClientResponse(paused, request.context)
        next_messages = self._after_tools(request, response, result, state)
        if next_messages is None:
            return self.do_finalize_loop(self._stamp(self._direct(response, result), state), state)
        if state.limit_exceeded is not None:
            request = _without_tools(request)
        return (yield from self._rounds(request, state, next_messages))

    def _rounds(self, request: ChatClientRequest, state: LoopState, messages: Sequence[Message]) -> _Flow:
        while True:
            state.round += 1
            round_request = self.do_before_call(request.with_prompt(request.prompt.with_messages(messages)), state)
            response = self.do_after_call((yield _ModelRound(round_request)), state)
            chat = response.chat_response
            if chat is not None and chat.metadata.usage is not None:
                state.usage += chat.metadata.usage
                state.saw_usage = True
            if chat is None or not chat.has_tool_calls:
                break
            if state.limit_exceeded is not None:
                response = self._end_at_limit(response, chat, state)
                break
            try:
                result: ToolExecutionResult = yield _RunTools(Prompt(state.history, round_request.prompt.options), chat)
            except ToolCallConfirmationRequired as pause:
                response = self._paused(response, pause, state)
                break
            next_messages = self._after_tools(round_request, response, result, state)
            if next_messages is None:
                response = self._direct(response, result)
                break
            messages = next_messages
            if state.limit_exceeded is not None:
                request = _without_tools(request)
        return self.do_finalize_loop(self._stamp(response, state), state)

    def _after_tools(
        self, request: ChatClientRequest, response: ChatClientResponse, result: ToolExecutionResult, state: LoopState
    ) -> Sequence[Message] | None:
        """Record a tool round; the next round's messages, or ``None`` when the results are the answer."""
        state.history = result.conversation_history
        state.last_result = result
        if result.return_direct:
            return None
        if result.limit_exceeded is not None:
            state.limit_exceeded = result.limit_exceeded
        return self.do_get_next_instructions(request, result, state)

    @staticmethod
    def _direct(response: ChatClientResponse, result: ToolExecutionResult) -> ChatClientResponse:
        chat = response.chat_response
        metadata = chat.metadata if chat is not None else None
        return response.with_chat_response(ChatResponse(result.build_generations(), metadata))

    @staticmethod
    def _paused(
        response: ChatClientResponse, pause: ToolCallConfirmationRequired, state: LoopState
    ) -> ChatClientResponse:
        """End the turn normally, the pending state in the response metadata and context."""
        state.pending = pause.pending
        chat = pause.chat_response
        extra = {
            **chat.metadata.extra,
            AWAITING_IDS_METADATA_KEY: list(pause.awaiting_ids),
            PENDING_METADATA_KEY: pause.pending.model_dump(mode="json"),
        }
        paused = response.with_chat_response(chat.with_metadata(extra=extra))
        return paused.with_context({ContextKeys.PENDING_TOOL_CALLS: pause.pending})

    @staticmethod
    def _end_at_limit(response: ChatClientResponse, chat: ChatResponse, state: LoopState) -> ChatClientResponse:
        """The last, tool-less round still asked for tools: answer with what the model said, or
        the limit message, and no pending calls."""
        generations = [
            Generation(
                AssistantMessage(g.output.text or state.limit_exceeded, metadata=g.output.metadata),
                GenerationMetadata(finish_reason=FinishReason.TOOL_CALL_LIMIT, extra=g.metadata.extra),
            )
            for g in chat.generations
        ]
        return response.with_chat_response(ChatResponse(generations, chat.metadata))

    @staticmethod
    def _stamp(response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        chat = response.chat_response
        if chat is not None and (state.round > 1 or state.limit_exceeded is not None):  # else: already right
            extra = chat.metadata.extra
            if state.limit_exceeded is not None:
                extra = {**extra, "tool_call_limit_exceeded": state.limit_exceeded}
            chat = chat.with_metadata(usage=state.usage if state.saw_usage else None, extra=extra)
        return ChatClientResponse(
            chat,
            {
                **response.context,
                ContextKeys.TOOL_LOOP_MESSAGES: state.added_messages,
                ContextKeys.TOOL_LOOP_ROUNDS: state.round,
            },
        )

    @staticmethod
    def _applies(request: ChatClientRequest) -> bool:
        return isinstance(request.prompt.options, ToolCallingChatOptions)

    # ------------------------------------------------------------------ drivers

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        if not self._applies(request):
            return next_(request)
        manager = self.tool_calling_manager

        def perform(step: _Step) -> Any:
            if isinstance(step, _ModelRound):
                return next_(step.request)
            return manager.execute_tool_calls(step.prompt, step.response, step.decisions)

        return _drive(self._flow(request, LoopState(streaming=False)), perform)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        if not self._applies(request):
            return await next_(request)
        manager = self.tool_calling_manager
        flow = self._flow(request, LoopState(streaming=False))
        try:
            step = next(flow)
            while True:
                try:
                    if isinstance(step, _ModelRound):
                        outcome: Any = await next_(step.request)
                    else:
                        outcome = await manager.aexecute_tool_calls(step.prompt, step.response, step.decisions)
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            result: ChatClientResponse = stop.value
            return result

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[ChatClientResponse]:
        if not self._applies(request):
            yield from next_(request)
            return
        manager = self.tool_calling_manager
        flow = self._flow(request, LoopState(streaming=True))
        round_ = _StreamRound()
        try:
            step = next(flow)
            while True:
                try:
                    if isinstance(step, _ModelRound):
                        round_ = _StreamRound()
                        for chunk in next_(step.request):
                            visible = round_.add(chunk)
                            if visible is not None:
                                yield visible
                        outcome: Any = round_.build()
                    else:
                        outcome = manager.execute_tool_calls(step.prompt, step.response, step.decisions)
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            yield _closing_chunk(stop.value, round_)

    async def aadvise_stream(
        self, request: ChatClientRequest, next_: AsyncStreamNext
    ) -> AsyncIterator[ChatClientResponse]:
        if not self._applies(request):
            async for chunk in next_(request):
                yield chunk
            return
        manager = self.tool_calling_manager
        flow = self._flow(request, LoopState(streaming=True))
        round_ = _StreamRound()
        try:
            step = next(flow)
            while True:
                try:
                    if isinstance(step, _ModelRound):
                        round_ = _StreamRound()
                        async for chunk in next_(step.request):
                            visible = round_.add(chunk)
                            if visible is not None:
                                yield visible
                        outcome: Any = round_.build()
                    else:
                        outcome = await manager.aexecute_tool_calls(step.prompt, step.response, step.decisions)
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            yield _closing_chunk(stop.value, round_)


def _drive(flow: _Flow, perform: Callable[[_Step], Any]) -> ChatClientResponse:
    try:
        step = next(flow)
        while True:
            try:
                outcome = perform(step)
            except Exception as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(outcome)
    except StopIteration as stop:
        result: ChatClientResponse = stop.value
        return result


def _without_tools(request: ChatClientRequest) -> ChatClientRequest:
    """The request for the loop's last round: tools stay defined (the history refers to them) but
    the model is told not to call any."""
    options = request.prompt.options
    assert isinstance(options, ToolCallingChatOptions)
    return request.with_prompt(request.prompt.with_options(options.model_copy(update={"tool_choice": "none"})))


class _StreamRound:
    """Aggregates one streamed round and decides what the caller sees right away: text deltas.

    Tool-call fragments, finish reasons and usage are held back; the loop's closing chunk carries
    the totals once the loop knows which round was the last.
    """

    __slots__ = ("_accumulator", "_built", "_context")

    def __init__(self) -> None:
        self._accumulator = ChatResponseAccumulator()
        self._context: Any = {}
        self._built: ChatResponse | None = None

    def add(self, chunk: ChatClientResponse) -> ChatClientResponse | None:
        self._context = chunk.context
        chat = chunk.chat_response
        if chat is None:
            return None
        self._accumulator.add(chat)
        if not chat.generations:
            return None
        if chat.metadata.usage is None and all(
            not g.output.tool_calls and g.metadata.finish_reason is None for g in chat.generations
        ):
            return chunk if any(g.output.text for g in chat.generations) else None
        if not any(g.output.text for g in chat.generations):
            return None
        text_only = ChatResponse(
            [Generation(AssistantMessage(g.output.text)) for g in chat.generations],
            chat.metadata.model_copy(update={"usage": None}),
        )
        return chunk.with_chat_response(text_only)

    def build(self) -> ChatClientResponse:
        self._built = self._accumulator.build() if self._accumulator.chunks else None
        return ChatClientResponse(self._built, self._context)

    def streamed_text(self, index: int) -> str:
        """The text of generation ``index`` that this round already delivered."""
        built = self._built
        if built is None or index >= len(built.generations):
            return ""
        return built.generations[index].output.text or ""


def _closing_chunk(final: ChatClientResponse, last_round: _StreamRound) -> ChatClientResponse:
    """The last chunk of a looped stream: finish reasons, summed usage, and any final text the
    caller has not seen yet (a ``return_direct`` result, a limit message, a hook's change).

    Text already delivered cannot be taken back: when a hook rewrote it, the new text is appended.
    """
    chat = final.chat_response
    if chat is None:
        return final
    generations = []
    for index, generation in enumerate(chat.generations):
        text = generation.output.text or ""
        seen = last_round.streamed_text(index)
        rest = text[len(seen) :] if text.startswith(seen) else text
        generations.append(Generation(AssistantMessage(rest or None), generation.metadata))
    return final.with_chat_response(ChatResponse(generations, chat.metadata))
