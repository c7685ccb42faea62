"""The tool loop as one advisor: model → tool calls → tools → next round, for every provider.

The loop is written once, as a generator *flow* (like httpx's ``Auth.auth_flow``): it yields what
it needs done — a model round, a batch of tool calls, an awaitable from an async hook, a stream
event to pass on — and receives the result. Four small drivers run it for call, stream, acall and
astream, so the four modes cannot drift apart: the final response is the flow's return value in
every mode.

Extensions customise the loop through the hooks of :class:`ToolLoopExtension`
(``do_initialize_loop``, ``do_before_call``, ``do_after_call``, ``do_get_next_instructions``,
``do_finalize_loop``); each receives the :class:`LoopState` of the running turn and may be sync or
async. A subclass of :class:`ToolCallingAdvisor` overrides the same hooks; it is the first
extension. Before-hooks (initialize, before_call) run in order — the advisor's own, then the
extensions as given — and after-hooks (after_call, finalize) in reverse, so each extension wraps the
ones after it; ``do_get_next_instructions`` hooks are chained in order, each seeing the messages the
previous one chose. The hooks run on resume too, so a resumed reply's calls run against the tool set
its round had.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, Union

import chatclient._builders as built
from chatclient._context_keys import CONVERSATION_ID
from chatclient._sync import run_sync
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
from chatclient.durable import (
    UNKNOWN_OUTCOME_MESSAGE,
    JournalEntry,
    TurnContinuation,
    TurnJournals,
    TurnProgress,
    UsageBudget,
    decisions_digest,
)
from chatclient.errors import (
    AdvisorChainError,
    ChatClientError,
    PendingStateNotFoundError,
    PendingStateTamperedError,
    ToolCallDecisionError,
    ToolCallLimitExceededError,
    TurnInProgressError,
    TurnInterruptedError,
    UsageLimitExceededError,
)
from chatclient.events import (
    RoundFinished,
    StreamEvent,
    ToolCallReady,
    ToolResultReady,
    TurnFinished,
    TurnPaused,
)
from chatclient.messages import AssistantMessage, Message, UserMessage
from chatclient.observation import NO_OBSERVERS, Observers
from chatclient.options import ToolCallingChatOptions
from chatclient.pending.journal import TurnJournal, check_retry, read_journal
from chatclient.pending.state import (
    AsyncNonceLedger,
    NonceLedger,
    StoredPendingToolCalls,
    aredeem,
    default_nonce_ledger,
    redeem,
)
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, FinishReason, Generation, GenerationMetadata, Usage
from chatclient.tools.callback import ToolCallback
from chatclient.tools.confirmation import (
    AWAITING_IDS_METADATA_KEY,
    PENDING_METADATA_KEY,
    PendingToolCalls,
    ToolCallConfirmationRequired,
    ToolCallDecision,
    ToolCallDecisions,
)
from chatclient.tools.manager import ToolCallingManager, ToolExecutionResult
from chatclient.tools.resume import check_decided_tools_present
from chatclient.tools.rules import (
    ApprovalHandler,
    ApprovalRule,
    Approvals,
    aask_handler,
    ask_handler,
    remembered_rule_id,
    rule_candidates,
)
from chatclient.turn import Turn, new_turn_id

__all__ = ["LoopState", "ToolCallingAdvisor", "ToolLoopExtension"]

NO_USAGE = Usage()  # frozen, so one instance serves every turn

T = TypeVar("T")


@dataclass
class LoopState:
    """What the loop knows about the running turn; hooks read it (and may keep notes in ``notes``)."""

    streaming: bool
    """True for ``stream()``/``astream()``."""
    turn_id: str = ""
    """The turn's id: new for each turn, kept across a pause and its resume."""
    round: int = 0
    """The current model round, from 1; 0 during ``do_initialize_loop``. A resumed turn goes on
    counting from the round it paused in."""
    history: tuple[Message, ...] = ()
    """The whole conversation so far: the messages before the turn, then the turn's own."""
    turn_start: int = 0
    """Index in ``history`` of the turn's first message (its user message)."""
    initial_length: int = 0
    usage: Usage = NO_USAGE
    """Usage summed over the rounds so far (those before a pause included)."""
    saw_usage: bool = False
    last_result: ToolExecutionResult | None = None
    limit_exceeded: str | None = None
    """Set when a tool-call limit was hit: the next round is the last one, without tools."""
    pending: PendingToolCalls | None = None
    """Set when the turn paused for confirmation: nothing of the paused reply has run."""
    observers: Observers = NO_OBSERVERS
    notes: dict[str, Any] = field(default_factory=dict)
    progressed: bool = False
    """Tools of this turn ran (here or before a resume): a failed model round now raises with a
    continuation instead of leaving the turn to be restarted."""
    journal: TurnJournal | None = None
    """A turn resumed from a journaled pending store: where its progress is recorded."""
    budget: UsageBudget | None = None
    conversation_usage: tuple[int, Usage] | None = None

    @property
    def turn_messages(self) -> tuple[Message, ...]:
        """The turn so far: its user message, tool-call messages and tool results."""
        return self.history[self.turn_start :]

    @property
    def added_messages(self) -> tuple[Message, ...]:
        """Messages this run of the loop added to its request's."""
        return self.history[self.initial_length :]


class ToolLoopExtension:
    """Hooks around the tool loop, each the identity by default; override the ones you need.

    Any hook may be ``async def`` (or return an awaitable): the sync drivers run it to completion,
    the async drivers await it. Register extensions with ``ToolCallingAdvisor(extensions=[...])``,
    the client builder's ``tool_loop_extensions(...)`` or a request's ``tool_loop_extensions(...)``.
    """

    def do_initialize_loop(self, request: ChatClientRequest, state: LoopState) -> Any:
        """Once, before the first round (and before a resume runs the decided calls)."""
        return request

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> Any:
        """Before each round; the request returned is sent, and its tools run that round's calls.

        Return a request with other ``tool_callbacks`` to change the tools offered this round.
        """
        return request

    def do_after_call(self, response: ChatClientResponse, state: LoopState) -> Any:
        """After each round's reply (assembled when streaming), before the loop decides whether it
        is a tool call, so an extension may alter or strip tool calls."""
        return response

    def do_get_next_instructions(
        self, request: ChatClientRequest, result: ToolExecutionResult, state: LoopState
    ) -> Any:
        """The messages the next round sends; by default the whole conversation so far."""
        return result.conversation_history

    def do_finalize_loop(self, response: ChatClientResponse, state: LoopState) -> Any:
        """Once, after the last round."""
        return response


_HookList = tuple[Callable[..., Any], ...]


@dataclass(frozen=True)
class _Hooks:
    initialize: _HookList
    before_call: _HookList
    after_call: _HookList
    next_instructions: _HookList
    finalize: _HookList


def _overridden(parties: Sequence[ToolLoopExtension], name: str) -> _HookList:
    """The bound hooks of ``parties`` that do something (identity hooks are skipped: they are free)."""
    base = getattr(ToolLoopExtension, name)
    return tuple(getattr(p, name) for p in parties if getattr(type(p), name, base) is not base)


def _hooks_of(parties: Sequence[ToolLoopExtension]) -> _Hooks:
    return _Hooks(
        initialize=_overridden(parties, "do_initialize_loop"),
        before_call=_overridden(parties, "do_before_call"),
        after_call=_overridden(parties, "do_after_call")[::-1],
        next_instructions=_overridden(parties, "do_get_next_instructions"),
        finalize=_overridden(parties, "do_finalize_loop")[::-1],
    )


# What the flow yields. A model round is the round's request itself (no step object per round); the
# others are slotted, not frozen (a frozen dataclass pays an ``object.__setattr__`` per field) and
# never changed once made.


@dataclass(slots=True)
class _RunTools:
    """Run a reply's tool calls (or its decided calls, on a resume)."""

    manager: ToolCallingManager
    prompt: Prompt
    response: ChatResponse
    observers: Observers
    decisions: ToolCallDecisions | None = None

    def run(self) -> ToolExecutionResult:
        return self.manager.execute_tool_calls(self.prompt, self.response, self.decisions, observers=self.observers)

    def arun(self) -> Awaitable[ToolExecutionResult]:
        return self.manager.aexecute_tool_calls(self.prompt, self.response, self.decisions, observers=self.observers)


@dataclass(slots=True)
class _Await:
    """Await something an async hook, store or ledger returned; a sync driver runs it to completion."""

    awaitable: Awaitable[Any]

    def run(self) -> Any:
        awaitable = self.awaitable
        return run_sync(lambda: awaitable)

    def arun(self) -> Awaitable[Any]:
        return self.awaitable


@dataclass(slots=True)
class _Ask:
    """Ask the approval handler for decisions; a failure or a timeout comes back as denials."""

    handler: ApprovalHandler
    pending: PendingToolCalls
    timeout: float | None

    def run(self) -> ToolCallDecisions | None:
        return ask_handler(self.handler, self.pending, self.timeout)

    def arun(self) -> Awaitable[ToolCallDecisions | None]:
        return aask_handler(self.handler, self.pending, self.timeout)


@dataclass(slots=True)
class _Emit:
    """Pass a stream event on (the flow yields these only when streaming)."""

    event: StreamEvent


_Step = Union[ChatClientRequest, _RunTools, _Await, _Ask, _Emit]  # noqa: UP007
_Flow = Generator[_Step, Any, ChatClientResponse]


def _resolved(value: Any) -> Generator[_Step, Any, Any]:
    """``value``, awaited by the driver when it is awaitable (an async store or ledger)."""
    if inspect.isawaitable(value):
        value = yield _Await(value)
    return value


def _apply(hooks: _HookList, value: T, state: LoopState) -> Generator[_Step, Any, T]:
    for hook in hooks:
        value = hook(value, state)
        if inspect.isawaitable(value):
            value = yield _Await(value)
    return value


class ToolCallingAdvisor(ToolAdvisor, ToolLoopExtension):
    """Runs the tool loop. Auto-registered once per chain; add your own instance (or a subclass) to
    the chain to replace it.

    Advisors with a lower order (memory) see one call per turn; advisors with a higher order sit
    inside the loop and see every round. ``nonce_ledger`` redeems each resumed pending state once
    (default: the process-wide in-memory ledger).
    """

    def __init__(
        self,
        tool_calling_manager: ToolCallingManager | None = None,
        *,
        extensions: Sequence[ToolLoopExtension] = (),
        nonce_ledger: NonceLedger | AsyncNonceLedger | None = None,
        order: int = AdvisorOrder.TOOL_CALLING,
        name: str = "ToolCallingAdvisor",
    ) -> None:
        if not AdvisorOrder.HIGHEST < order < AdvisorOrder.LOWEST:
            raise ValueError("the tool loop's order must lie strictly between HIGHEST and LOWEST")
        self.tool_calling_manager = tool_calling_manager or ToolCallingManager.builder().build()
        self.extensions = tuple(extensions)
        self.nonce_ledger: NonceLedger | AsyncNonceLedger = (
            nonce_ledger if nonce_ledger is not None else default_nonce_ledger()
        )
        self._order = order
        self._name = name
        self._hooks = _hooks_of((self, *self.extensions))
        hooks = self._hooks
        self._hookless = not (
            hooks.initialize or hooks.before_call or hooks.after_call or hooks.next_instructions or hooks.finalize
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def order(self) -> int:
        return self._order

    # ------------------------------------------------------------------ the loop, written once

    def _turn(self, request: ChatClientRequest, streaming: bool) -> _Flow:
        """The flow of the turn that ``request`` starts (or resumes)."""
        if self._is_plain(request):
            return self._plain(request, streaming)
        return self._start(request, streaming, _observers_of(request))

    def _plain(self, request: ChatClientRequest, streaming: bool) -> _Flow:
        """A turn without tools, hooks or a resume is one round: no loop state and no loop generators,
        unless the reply asks for tools all the same; then the loop takes over from that reply.
        The streams run it; the two call drivers run the same few lines inline, without the generator
        and its ``StopIteration`` (why: ``benchmarks/results/2026-12-06-perf.md``)."""
        first: ChatClientResponse = yield request
        final = _plain_reply(request, first.chat_response, first.context)
        if final is None:
            return (yield from self._start(request, streaming, _observers_of(request), first))
        if streaming:
            yield _Emit(RoundFinished(1, first))
        return final

    def _start(
        self,
        request: ChatClientRequest,
        streaming: bool,
        observers: Observers,
        answered: ChatClientResponse | None = None,
    ) -> _Flow:
        """The loop's flow; ``answered`` is the reply to its first round when that was sent already."""
        context = request.context
        extra = context.get(ContextKeys.TOOL_LOOP_EXTENSIONS)
        hooks = _hooks_of((self, *self.extensions, *extra)) if extra else self._hooks
        state = LoopState(streaming)  # positional, observers set only when there are any: no keyword dict
        if observers is not NO_OBSERVERS:
            state.observers = observers
        budget = context.get(ContextKeys.USAGE_BUDGET)
        if budget is not None:
            state.budget = budget
            state.conversation_usage = context.get(ContextKeys.CONVERSATION_USAGE)
        if hooks.initialize or ContextKeys.RESUME in context:
            return self._flow(request, state, hooks)
        return self._new_turn(request, state, hooks, answered)  # the rounds' own generator: one frame less per step

    def _flow(self, request: ChatClientRequest, state: LoopState, hooks: _Hooks) -> _Flow:
        if hooks.initialize:
            request = yield from _apply(hooks.initialize, request, state)
        resume = request.context.get(ContextKeys.RESUME)
        if resume is not None:
            if isinstance(resume[0], TurnContinuation):
                return (yield from self._continue(request, state, hooks, resume[0].progress, resume[0]))
            words = request.context.get(ContextKeys.RESUME_USER)
            return (yield from self._resume(request, state, hooks, *resume, words=words))
        return (yield from self._new_turn(request, state, hooks))

    def _new_turn(
        self, request: ChatClientRequest, state: LoopState, hooks: _Hooks, answered: ChatClientResponse | None = None
    ) -> _Flow:
        """The rounds of a turn that starts with ``request``."""
        messages = request.prompt.messages
        state.history = messages
        state.initial_length = len(messages)
        state.turn_start = _turn_start(messages)
        state.turn_id = request.context.get(ContextKeys.TURN_ID) or new_turn_id()
        return self._rounds(request, state, hooks, messages, answered)

    def _redeem(self, pending: PendingToolCalls) -> Generator[_Step, Any, None]:
        """Redeem the state's nonce once; an async ledger is awaited (the sync drivers run it)."""
        ledger = self.nonce_ledger
        if inspect.iscoroutinefunction(ledger.redeem):
            yield _Await(aredeem(pending, ledger))  # type: ignore[arg-type]
        else:
            redeem(pending, ledger)  # type: ignore[arg-type]

    def _continue(
        self,
        request: ChatClientRequest,
        state: LoopState,
        hooks: _Hooks,
        progress: TurnProgress,
        continuation: TurnContinuation | None = None,
    ) -> _Flow:
        """Go on from recorded progress: the next model round reads exactly the recorded results. A
        memory-backed turn's continuation first claims the turn's journal at the version it was made
        at (of two continuations, one goes on); one taken over after a crash first answers the calls
        the dead process had started."""
        _restore(state, progress)
        journals = request.context.get(ContextKeys.TURN_JOURNALS)
        if continuation is not None and continuation.journal_version is not None and journals is not None:
            journal = TurnJournal(journals.slot(state.turn_id), ToolCallDecisions(), "", continuation.journal_version)
            state.journal = journal
            started = continuation.started
            claim = journal.running(started, progress) if started else journal.recorded(progress)
            yield from _write(journal, claim, "claiming it")
            if continuation.started:
                return (yield from self._after_crash_batch(request, state, hooks, continuation.started))
        if state.limit_exceeded is not None:
            request = _without_tools(request)
        return (yield from self._rounds(request, state, hooks, progress.history))

    def _after_crash_batch(
        self, request: ChatClientRequest, state: LoopState, hooks: _Hooks, started: tuple[str, ...]
    ) -> _Flow:
        """Answer the batch a dead process had started (the last message asked for it): a started call
        is reported as of unknown outcome, not run again, unless its tool is ``idempotent``."""
        asked = state.history[-1]
        assert isinstance(asked, AssistantMessage) and asked.tool_calls
        state.history = state.history[:-1]
        idempotent = {c.name for c in request.prompt.tool_callbacks if c.metadata.idempotent}
        decisions = ToolCallDecisions.of(
            ToolCallDecision.deny(call.id, UNKNOWN_OUTCOME_MESSAGE, reason="outcome unknown")
            if call.id in started and call.name not in idempotent
            else ToolCallDecision.allow(call.id, reason="run again: idempotent or never started")
            for call in asked.tool_calls
        )
        chat = ChatResponse([Generation(asked)])
        prompt = _with_messages(request.prompt, state.history)
        tools = _RunTools(self.tool_calling_manager, prompt, chat, state.observers, decisions)
        result: ToolExecutionResult = yield tools
        yield from self._emit_results(result, state)
        next_messages = yield from self._after_tools(request, result, state, hooks)
        if next_messages is None:
            response = self._direct(ChatClientResponse(chat, request.context), result)
            response = self._stamp(response, state, None)
            return (yield from _apply(hooks.finalize, response, state))
        journal = state.journal
        assert journal is not None
        yield from _write(journal, journal.recorded(_progress_of(state)), "recording results")
        if state.limit_exceeded is not None:
            request = _without_tools(request)
        return (yield from self._rounds(request, state, hooks, next_messages))

    def _resume(  # noqa: C901 (a journaled resume's three starts read best in one place)
        self,
        request: ChatClientRequest,
        state: LoopState,
        hooks: _Hooks,
        source: PendingToolCalls | StoredPendingToolCalls,
        decisions: ToolCallDecisions,
        *,
        words: str | None = None,
        inline: ChatClientRequest | None = None,
    ) -> _Flow:
        """Run the decided calls of a paused reply — against the tools its round had — then go on
        as after any tool round. The state is redeemed first, so it runs once; a state still in its
        store is taken only once the decisions (and who made them) passed every check. ``words``:
        the person's message, added after the calls' results. ``inline``: the round's request when
        the calls were decided without a pause (rules, a handler): its hooks ran already.

        A journaled store keeps the state until the turn completes and records its progress beside
        it (``chatclient.pending.journal``): a retry after a failure goes on from the recorded
        results, and one whose tools a crashed process had started reports them as unknown."""
        stored = source if isinstance(source, StoredPendingToolCalls) else None
        pending = (yield from _peek(stored)) if stored is not None else source
        assert isinstance(pending, PendingToolCalls)
        pending.verify()
        remembered = [d for d in decisions.decisions if d.remember is not None]
        if remembered:
            _check_rule_store(request)
        entry: JournalEntry | None = None
        if stored is not None and stored.journaled:
            version, text = yield from _resolved(read_journal(stored))
            entry = JournalEntry.load(text) if text is not None else None
            check_retry(entry, decisions, stored.after_crash)
            if entry is not None and entry.status == "released":
                entry = None  # a resume refused before anything ran: as if none had begun
            state.journal = TurnJournal(stored, decisions, decisions_digest(decisions), version)
        if stored is None:
            yield from self._redeem(pending)
        state.turn_id = pending.turn_id or new_turn_id()
        state.turn_start = pending.turn_start
        state.round = pending.round
        if pending.usage is not None:
            state.usage, state.saw_usage = pending.usage, True
        state.history = pending.history_before_reply()
        if inline is None:
            state.initial_length = len(state.history)
        observers = state.observers
        journal = state.journal
        if entry is not None and entry.status == "recorded":  # the tools ran: go on from their results
            assert journal is not None and entry.progress is not None
            claim = entry.model_copy(
                update={"by": journal.token}
            )  # this resume's own text: of concurrent retries, one goes on
            yield from _write(journal, claim, "claiming it")
            return (yield from self._continue(request, state, hooks, entry.progress))
        if inline is not None:
            round_request = inline
        else:
            if observers:
                observers.turn_resumed(pending)
            paused_round = request.with_prompt(_with_messages(request.prompt, state.history))
            round_request = yield from _apply(hooks.before_call, paused_round, state)
        paused = pending.paused_response()
        run_prompt = _with_messages(round_request.prompt, state.history)
        try:
            _check_tool_identities(pending, round_request.prompt.tool_callbacks)
            check_decided_tools_present(pending, decisions, round_request.prompt.tool_callbacks)
        except ToolCallDecisionError:
            if stored is None:
                yield from _resolved(self.nonce_ledger.release(pending.nonce))  # nothing ran: resumable again
            raise
        if journal is not None and entry is not None:  # "running" after a crash: nothing it started runs again
            assert stored is not None and stored.after_crash
            decisions = _after_crash(decisions, entry.started, round_request.prompt.tool_callbacks, pending)
            yield from _write(journal, journal.running(entry.started), "taking it over")
        elif stored is not None:
            self.tool_calling_manager.check_decisions(run_prompt, paused, decisions, observers=observers)
            if journal is not None:  # the claim: of two resumes that passed the checks, one wins
                started = tuple(c.id for c in pending.calls if (d := decisions.get(c.id)) is None or d.allowed)
                yield from _write(journal, journal.running(started), "starting it")
            elif (yield from _take(stored)) != pending:  # of two resumes that passed the checks, the store picks one
                raise PendingStateTamperedError("The stored pending state changed while it was resumed; nothing ran")
            yield from self._redeem(pending)
        tools = _RunTools(self.tool_calling_manager, run_prompt, paused, observers, decisions)
        try:
            if remembered:  # kept once the decisions passed every check, before anything runs
                self.tool_calling_manager.check_decisions(run_prompt, paused, decisions)
                yield from _remember(request, pending, remembered)
            result: ToolExecutionResult = yield tools
        except ToolCallDecisionError:
            yield from _resolved(self.nonce_ledger.release(pending.nonce))  # nothing ran: resumable again
            if journal is not None:
                yield from _write(journal, journal.released(), "releasing it")
            raise
        state.progressed = True
        yield from self._emit_results(result, state)
        response = ChatClientResponse(paused, request.context)
        next_messages = yield from self._after_tools(round_request, result, state, hooks)
        if words is not None:  # the person's message follows the results, in the same turn
            said = UserMessage(words)
            state.history = (*state.history, said)
            next_messages = state.history if next_messages is None else (*next_messages, said)
        if next_messages is None:
            response = self._direct(response, result)
            response = yield from self._completed(self._stamp(response, state, None), state)
            return (yield from _apply(hooks.finalize, response, state))
        if journal is not None:
            yield from _write(journal, journal.recorded(_progress_of(state)), "recording results")
        if state.limit_exceeded is not None:
            request = _without_tools(request)
        return (yield from self._rounds(request, state, hooks, next_messages))

    def _rounds(  # noqa: C901 (a tool round's steps inline too: no generator per round)
        self,
        request: ChatClientRequest,
        state: LoopState,
        hooks: _Hooks,
        messages: Sequence[Message],
        answered: ChatClientResponse | None = None,
    ) -> _Flow:
        """The rounds of a turn. Each round's steps are inline, the tool batch's too (a generator per
        step would cost a frame, and a ``yield from`` layer on every step of the round)."""
        streaming = state.streaming
        manager = self.tool_calling_manager
        if state.round == 0 and ContextKeys.TURN_JOURNALS in request.context:  # a new memory-backed turn
            yield from _resolved(request.context[ContextKeys.TURN_JOURNALS].check())
        while True:
            state.round += 1
            round_request = _round_request(request, messages)
            if hooks.before_call:
                round_request = yield from _apply(hooks.before_call, round_request, state)
            if state.budget is not None:
                try:
                    _check_budget(state, request)
                except UsageLimitExceededError as exc:
                    if (yield from _let_go(state, request)):
                        exc.continuation = _continuation(state, request)
                    raise
            if answered is None:
                try:
                    response: ChatClientResponse = yield round_request
                except Exception as exc:
                    if state.progressed:  # tools ran: the error carries the turn's continuation
                        yield from _let_go(state, request)
                        raise _interrupted(exc, state, request) from exc
                    raise
            else:  # the first round was sent as it is (no hooks) and answered already
                response, answered = answered, None
            if hooks.after_call:
                response = yield from _apply(hooks.after_call, response, state)
            chat = _counted(response, state)
            if streaming:
                yield _Emit(RoundFinished(state.round, response))
            if chat is None or not chat.has_tool_calls:
                answer = _first_output(response)
                break
            if state.limit_exceeded is not None:
                response = self._end_at_limit(response, chat, state)
                answer = _first_output(response)
                break
            # The tool round: its calls run (or the turn pauses before any does), then the next messages.
            if streaming:
                for call in chat.tool_calls:
                    yield _Emit(ToolCallReady(call, state.round))
            journal = state.journal
            if journal is None and ContextKeys.TURN_JOURNALS in request.context:  # a memory-backed turn's first batch
                journal = yield from _open_journal(request, state)
            if journal is not None:  # claimed before any call runs: a crash leaves them "started"
                ids = tuple(c.id for c in chat.tool_calls)
                asked = _progress_asking(state, chat) if journal.in_conversation else None
                yield from _write(journal, journal.running(ids, asked), "running tools")
            try:
                tools = _RunTools(manager, _with_messages(round_request.prompt, state.history), chat, state.observers)
                result: ToolExecutionResult = yield tools
            except ToolCallConfirmationRequired as pause:
                approvals: Approvals | None = request.context.get(ContextKeys.APPROVALS)
                if approvals is not None:  # rules or a handler may decide now: then no pause
                    decided = yield from self._decide_now(pause, state, round_request, approvals)
                    if decided is not None:
                        return (yield from self._resume(request, state, hooks, *decided, inline=round_request))
                if journal is not None and journal.in_conversation:  # nothing ran: the paused state holds the turn
                    yield from _write(journal, journal.released(), "pausing")
                response = yield from self._paused(response, pause, state, round_request)
                answer = state.pending.reply if state.pending is not None else None
                break
            except (ToolCallLimitExceededError, ToolCallDecisionError):
                if journal is not None:  # refused before any call ran: the claim goes back to the last results
                    progress = _continuation(state, request).progress
                    back = journal.recorded(progress) if state.progressed else journal.released()
                    yield from _write(journal, back, "releasing its tool round")
                raise
            state.progressed = True
            if streaming:
                yield from self._emit_results(result, state)
            if hooks.next_instructions:
                next_messages = yield from self._after_tools(round_request, result, state, hooks)
            else:
                next_messages = None if self._record_tools(result, state) else result.conversation_history
            if next_messages is None:
                response, answer = self._direct(response, result), None  # the results are the answer
                break
            messages = next_messages
            if journal is not None:  # the results are kept before the next round is sent
                yield from _write(journal, journal.recorded(_progress_of(state)), "recording results")
            if state.limit_exceeded is not None:
                request = _without_tools(request)
        response = self._stamp(response, state, answer)
        if state.journal is not None:
            response = yield from self._completed(response, state)
        if hooks.finalize:
            response = yield from _apply(hooks.finalize, response, state)
        return response

    @staticmethod
    def _completed(response: ChatClientResponse, state: LoopState) -> Generator[_Step, Any, ChatClientResponse]:
        """End a journaled turn by taking its state (the journal goes with it): the store's atomic take
        is the last compare-and-set, so of two resumes that reached the end, one answers."""
        journal = state.journal
        if journal is not None and isinstance(journal.stored, StoredPendingToolCalls):  # memory clears its own
            try:
                yield from _take(journal.stored)
            except PendingStateNotFoundError as exc:
                raise TurnInProgressError(
                    "Another resume of this paused turn completed it first; this one's answer is dropped"
                ) from exc
        return response

    @staticmethod
    def _emit_results(result: ToolExecutionResult, state: LoopState) -> Generator[_Step, Any, None]:
        if state.streaming:
            for tool_response in result.tool_responses:
                yield _Emit(ToolResultReady(tool_response, state.round))

    @staticmethod
    def _record_tools(result: ToolExecutionResult, state: LoopState) -> bool:
        """Record a tool round; ``True`` when its results are the answer (every tool ``return_direct``)."""
        state.history = result.conversation_history
        state.last_result = result
        if result.return_direct:
            return True
        if result.limit_exceeded is not None:
            state.limit_exceeded = result.limit_exceeded
        return False

    @staticmethod
    def _after_tools(
        request: ChatClientRequest, result: ToolExecutionResult, state: LoopState, hooks: _Hooks
    ) -> Generator[_Step, Any, Sequence[Message] | None]:
        """Record a tool round; the next round's messages, or ``None`` when the results are the answer."""
        if ToolCallingAdvisor._record_tools(result, state):
            return None
        messages: Sequence[Message] = result.conversation_history
        for hook in hooks.next_instructions:
            chosen = hook(request, replace(result, conversation_history=tuple(messages)), state)
            if inspect.isawaitable(chosen):
                chosen = yield _Await(chosen)
            messages = chosen
        return messages

    @staticmethod
    def _direct(response: ChatClientResponse, result: ToolExecutionResult) -> ChatClientResponse:
        chat = response.chat_response
        metadata = chat.metadata if chat is not None else None
        return response.with_chat_response(ChatResponse(result.build_generations(), metadata))

    def _decide_now(
        self, pause: ToolCallConfirmationRequired, state: LoopState, request: ChatClientRequest, approvals: Approvals
    ) -> Generator[_Step, Any, tuple[PendingToolCalls, ToolCallDecisions] | None]:
        """Decisions for a reply that would pause, from standing rules (the client's, then the
        conversation's), then the approval handler for what they leave; ``None``: pause as usual.
        A rule whose author the authorizer refuses decides nothing (reported as refused)."""
        pending = _placed(pause.pending, state, request)
        rules = list(approvals.rules)
        conversation = request.context.get(CONVERSATION_ID)
        if approvals.store is not None and isinstance(conversation, str) and conversation:
            stored_rules = yield from _resolved(approvals.store.list(conversation))
            rules = [*rules, *stored_rules]
        decided = self._by_rules(rule_candidates(pending, rules), pause, state, request) if rules else {}
        if not set(pending.awaiting_ids) <= decided.keys():
            if approvals.handler is None:
                return None
            answer: ToolCallDecisions | None = yield _Ask(approvals.handler, pending, approvals.timeout)
            if answer is None:
                return None
            decided = {**decided, **answer.by_id}
        for call in pending.calls:  # calls that needed no person run, as they would have without the gate
            if not call.requires_confirmation and call.id not in decided:
                decided[call.id] = ToolCallDecision.allow(call.id, reason="needed no confirmation")
        extra = [d for call_id, d in decided.items() if call_id not in {c.id for c in pending.calls}]
        ordered = [decided[c.id] for c in pending.calls if c.id in decided]
        return pending, ToolCallDecisions.of(ordered, extra)  # an unknown id is refused by the manager

    def _by_rules(
        self,
        candidates: dict[str, list[ApprovalRule]],
        pause: ToolCallConfirmationRequired,
        state: LoopState,
        request: ChatClientRequest,
    ) -> dict[str, ToolCallDecision]:
        """Each call's first matching rule whose author the authorizer lets decide it (every refusal
        is reported); a call no such rule decides is left out."""
        prompt = _with_messages(request.prompt, state.history)
        decided: dict[str, ToolCallDecision] = {}
        tried = dict.fromkeys(candidates, 0)
        while tried:
            trying = {call_id: candidates[call_id][n].decision(call_id) for call_id, n in tried.items()}
            refused = self.tool_calling_manager.refusals(prompt, pause.chat_response, trying, observers=state.observers)
            decided.update((call_id, d) for call_id, d in trying.items() if call_id not in refused)
            tried = {
                call_id: tried[call_id] + 1 for call_id in refused if tried[call_id] + 1 < len(candidates[call_id])
            }
        return decided

    @staticmethod
    def _paused(
        response: ChatClientResponse, pause: ToolCallConfirmationRequired, state: LoopState, request: ChatClientRequest
    ) -> Generator[_Step, Any, ChatClientResponse]:
        """End the turn normally, the pending state (placed in its turn) in the metadata and context."""
        pending = _placed(pause.pending, state, request)
        if state.observers:
            pending = state.observers.turn_paused(pending)
        state.pending = pending
        chat = pause.chat_response
        awaiting = FinishReason.AWAITING_DECISION
        generations = [
            Generation(g.output, GenerationMetadata(finish_reason=awaiting, extra=g.metadata.extra))
            if g.output.tool_calls
            else g
            for g in chat.generations
        ]
        extra = {
            **chat.metadata.extra,
            AWAITING_IDS_METADATA_KEY: list(pending.awaiting_ids),
            PENDING_METADATA_KEY: pending.model_dump(mode="json"),
        }
        paused = ChatResponse(generations, chat.metadata.model_copy(update={"extra": extra}))
        if state.streaming:
            yield _Emit(TurnPaused(pending))
        return response.with_chat_response(paused).with_context({ContextKeys.PENDING_TOOL_CALLS: pending})

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
    def _stamp(response: ChatClientResponse, state: LoopState, answer: AssistantMessage | None) -> ChatClientResponse:
        """The final response: usage summed over the turn's rounds, and the turn in the context."""
        chat = response.chat_response
        if chat is not None and (state.round > 1 or state.limit_exceeded is not None):  # else: already right
            metadata = chat.metadata
            extra = metadata.extra
            if state.limit_exceeded is not None:
                extra = {**extra, "tool_call_limit_exceeded": state.limit_exceeded}
            usage = state.usage if state.saw_usage else None
            if usage is not metadata.usage or extra is not metadata.extra:  # else: no copy that changes nothing
                chat = chat.with_metadata(usage=usage, extra=extra)
        messages = state.turn_messages if answer is None else (*state.turn_messages, answer)
        turn = Turn(state.turn_id, messages, state.round, state.pending is not None)  # positional: no keyword dict
        return ChatClientResponse(chat, {**response.context, ContextKeys.TURN: turn})

    @staticmethod
    def _applies(request: ChatClientRequest) -> bool:
        return isinstance(request.prompt.options, ToolCallingChatOptions)

    def _is_plain(self, request: ChatClientRequest) -> bool:
        """No tools, no hooks, nothing to resume: see :meth:`_plain`."""
        options = request.prompt.options
        assert isinstance(options, ToolCallingChatOptions)
        if options.tool_callbacks or not self._hookless:
            return False
        context = request.context
        return (
            ContextKeys.RESUME not in context
            and not context.get(ContextKeys.TOOL_LOOP_EXTENSIONS)
            and ContextKeys.USAGE_BUDGET not in context
        )

    # ------------------------------------------------------------------ drivers
    # Each runs the flow: a model round goes to ``next_``, an event to the stream's consumer, any other
    # step runs itself (``run``/``arun``); what it comes to is sent back, an error thrown in.

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        if not self._applies(request):
            return next_(request)
        first: ChatClientResponse | None = None
        if self._is_plain(request):  # as _plain, without a generator: S1's path
            first = next_(request)
            final = _plain_reply(request, first.chat_response, first.context)
            if final is not None:
                return final
        flow = self._start(request, False, _observers_of(request), first)
        try:
            step = next(flow)
            while True:
                try:
                    outcome = next_(step) if isinstance(step, ChatClientRequest) else _work(step).run()
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            return _final(stop)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        if not self._applies(request):
            return await next_(request)
        first: ChatClientResponse | None = None
        if self._is_plain(request):  # as _plain, without a generator: S1's path
            first = await next_(request)
            final = _plain_reply(request, first.chat_response, first.context)
            if final is not None:
                return final
        flow = self._start(request, False, _observers_of(request), first)
        try:
            step = next(flow)
            while True:
                try:
                    outcome = await (next_(step) if isinstance(step, ChatClientRequest) else _work(step).arun())
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            return _final(stop)

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        if not self._applies(request):
            yield from next_(request)
            return
        flow = self._turn(request, True)
        try:
            step = next(flow)
            while True:
                try:
                    if isinstance(step, ChatClientRequest):
                        outcome: Any = None
                        for event in next_(step):
                            if isinstance(event, TurnFinished):
                                outcome = event.response
                            else:
                                yield event
                        _check_finished(outcome)
                    elif isinstance(step, _Emit):
                        yield step.event
                        outcome = None
                    else:
                        outcome = step.run()
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            yield TurnFinished(_final(stop))

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        if not self._applies(request):
            async for event in next_(request):
                yield event
            return
        flow = self._turn(request, True)
        try:
            step = next(flow)
            while True:
                try:
                    if isinstance(step, ChatClientRequest):
                        outcome: Any = None
                        async for event in next_(step):
                            if isinstance(event, TurnFinished):
                                outcome = event.response
                            else:
                                yield event
                        _check_finished(outcome)
                    elif isinstance(step, _Emit):
                        yield step.event
                        outcome = None
                    else:
                        outcome = await step.arun()
                except Exception as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(outcome)
        except StopIteration as stop:
            yield TurnFinished(_final(stop))


def _plain_reply(
    request: ChatClientRequest, chat: ChatResponse | None, context: Mapping[str, Any]
) -> ChatClientResponse | None:
    """The final response of a plain turn's one round (what the loop's ``_stamp`` makes of it: round 1,
    no tools ran, so the reply is unchanged); ``None`` when the reply asks for tools."""
    if chat is not None and chat.has_tool_calls:
        return None
    messages = request.prompt.messages
    result = chat.result if chat is not None else None
    answer = result.output if result is not None else None
    turn_messages = messages[_turn_start(messages) :]
    turn_id = request.context.get(ContextKeys.TURN_ID) or new_turn_id()
    turn = Turn(turn_id, turn_messages if answer is None else (*turn_messages, answer), 1)
    return ChatClientResponse(chat, {**context, ContextKeys.TURN: turn})


def _placed(pending: PendingToolCalls, state: LoopState, request: ChatClientRequest) -> PendingToolCalls:
    """The manager's pending state placed in its turn, bound to the request's conversation."""
    pending = pending.for_turn(state.turn_id, state.turn_start, state.round, state.usage if state.saw_usage else None)
    conversation = request.context.get(CONVERSATION_ID)
    if isinstance(conversation, str) and conversation:  # bound before observers see it, as it is stored
        pending = pending.in_conversation(conversation)
    return pending


def _check_rule_store(request: ChatClientRequest) -> None:
    """A ``remember=`` decision needs somewhere to keep the rule: refused before anything runs."""
    approvals: Approvals | None = request.context.get(ContextKeys.APPROVALS)
    conversation = request.context.get(CONVERSATION_ID)
    if approvals is None or approvals.store is None or not conversation:
        raise ToolCallDecisionError(
            'A decision with remember="conversation" needs conversation rules and a conversation: configure '
            "ChatClient.builder().approval_rules(ConversationRules(repository)) and resume in the conversation; "
            "nothing ran"
        )


def _remember(
    request: ChatClientRequest, pending: PendingToolCalls, remembered: Sequence[ToolCallDecision]
) -> Generator[_Step, Any, None]:
    """Keep each ``remember="conversation"`` decision as a rule of the conversation (its id comes from
    the state and the call, so a retried resume adds it once)."""
    approvals: Approvals = request.context[ContextKeys.APPROVALS]
    conversation = str(request.context[CONVERSATION_ID])
    names = {call.id: call.name for call in pending.calls}
    for decision in remembered:
        rule = ApprovalRule.made_by(
            names[decision.id],
            decision.allowed,
            decision.approver,
            id=remembered_rule_id(pending, decision.id),
            message=None if decision.allowed else decision.message,
        )
        yield from _resolved(approvals.store.add(conversation, rule))  # idempotent by rule id


def _peek(stored: StoredPendingToolCalls) -> Generator[_Step, Any, PendingToolCalls]:
    """The stored state, read without taking it; an async store is awaited on the request's loop
    (a sync run never gets here with one: its prepare refused it)."""
    if stored.is_async:
        pending: PendingToolCalls = yield _Await(stored.apeek())
        return pending
    return stored.peek()


def _take(stored: StoredPendingToolCalls) -> Generator[_Step, Any, PendingToolCalls]:
    """The store's atomic take, awaited for an async store."""
    if stored.is_async:
        pending: PendingToolCalls = yield _Await(stored.atake())
        return pending
    return stored.take()


def _write(journal: TurnJournal, entry: JournalEntry, doing: str) -> Generator[_Step, Any, None]:
    """One compare-and-set on the turn's journal; losing it stops this resume before it runs anything."""
    ok = yield from _resolved(journal.write(entry))
    journal.landed(bool(ok), doing)


def _progress_of(state: LoopState) -> TurnProgress:
    usage = state.usage if state.saw_usage else None
    return TurnProgress(
        turn_id=state.turn_id,
        turn_start=state.turn_start,
        round=state.round,
        history=tuple(state.history),
        usage=usage,
        limit_exceeded=state.limit_exceeded,
    )


def _restore(state: LoopState, progress: TurnProgress) -> None:
    state.turn_id, state.turn_start, state.round = progress.turn_id, progress.turn_start, progress.round
    state.history = progress.history
    state.initial_length = len(progress.history)
    state.limit_exceeded = progress.limit_exceeded
    if progress.usage is not None:
        state.usage, state.saw_usage = progress.usage, True
    state.progressed = True


def _continuation(state: LoopState, request: ChatClientRequest) -> TurnContinuation:
    """The turn as recorded before the round about to be sent (``state.round`` counts that round)."""
    progress = _progress_of(state).model_copy(update={"round": state.round - 1})
    conversation = request.context.get(CONVERSATION_ID)
    journal = state.journal
    if journal is not None and journal.in_conversation:  # a memory-backed turn: its journal's version
        return TurnContinuation(
            progress, conversation if isinstance(conversation, str) else "", journal_version=journal.version
        )
    return TurnContinuation(
        progress,
        conversation if isinstance(conversation, str) else "",
        journal.stored if journal is not None else None,
        journal.decisions if journal is not None else None,
    )


def _let_go(state: LoopState, request: ChatClientRequest) -> Generator[_Step, Any, bool]:
    """A memory-backed turn that stops before its next model round lets go of its journal (``stopped``):
    any later request may continue it, where a ``recorded`` one may still be running that round. Best
    effort: if this write fails, the journal stays held (``after_crash`` takes it over)."""
    journal = state.journal
    if journal is None or not journal.in_conversation:
        return False
    try:
        yield from _write(journal, journal.stopped(_continuation(state, request).progress), "stopping")
    except Exception:  # the round's own error is the one to report
        return False
    return True


def _open_journal(request: ChatClientRequest, state: LoopState) -> Generator[_Step, Any, TurnJournal]:
    """A memory-backed turn's journal, opened before its first tool batch (refused, before anything
    runs, while another turn of the conversation is unfinished)."""
    journals: TurnJournals = request.context[ContextKeys.TURN_JOURNALS]
    slot, version = yield from _resolved(journals.open(state.turn_id))
    journal = TurnJournal(slot, ToolCallDecisions(), "", version)
    state.journal = journal
    return journal


def _progress_asking(state: LoopState, chat: ChatResponse) -> TurnProgress:
    """The turn up to the reply whose calls are about to run (a crash leaves them "started")."""
    asked = next(g.output for g in chat.generations if g.output.tool_calls)
    usage = state.usage if state.saw_usage else None
    return TurnProgress(
        turn_id=state.turn_id,
        turn_start=state.turn_start,
        round=state.round,
        history=(*state.history, asked),
        usage=usage,
        limit_exceeded=state.limit_exceeded,
    )


def _interrupted(exc: Exception, state: LoopState, request: ChatClientRequest) -> Exception:
    """The failure of a model round after tools ran, carrying the continuation: a chatclient error
    keeps its type (handlers of it still match); any other is wrapped in ``TurnInterruptedError``."""
    continuation = _continuation(state, request)
    if isinstance(exc, ChatClientError) and exc.continuation is None:
        exc.continuation = continuation
        return exc
    return TurnInterruptedError(
        f"A model round failed after tools of this turn ran ({type(exc).__name__}: {exc}); their results are "
        "kept: continue with client.prompt().continue_turn(err.continuation)",
        continuation,
    )


def _check_budget(state: LoopState, request: ChatClientRequest) -> None:
    """Refuse the next model round when it would pass a budget (``state.round`` is that round)."""
    budget = state.budget
    assert budget is not None
    used = state.usage if state.saw_usage else None
    breach = budget.per_turn.breach(state.round, used) if budget.per_turn is not None else None
    scope = "per turn"
    if breach is None and budget.per_conversation is not None:
        before_requests, before = state.conversation_usage or (0, Usage())
        breach = budget.per_conversation.breach(before_requests + state.round, before + used if used else before)
        scope = "per conversation"
    if breach is not None:
        raise UsageLimitExceededError(
            f"Usage limit {scope} reached ({breach}); round {state.round} was not sent. Raise the limit and "
            "continue with client.prompt().continue_turn(err.continuation).usage_limits(...)",
            f"{scope}: {breach}",
            _continuation(state, request),
        )


def _observers_of(request: ChatClientRequest) -> Observers:
    observers: Observers | None = request.context.get(ContextKeys.OBSERVERS)
    return observers if observers is not None else NO_OBSERVERS


def _work(step: _Step) -> _RunTools | _Await | _Ask:
    """A call's step that is not a model round (a call's flow emits no events)."""
    assert not isinstance(step, (ChatClientRequest, _Emit))
    return step


def _final(stop: StopIteration) -> ChatClientResponse:
    """The flow's return value: the turn's final response."""
    response: ChatClientResponse = stop.value
    return response


def _check_finished(outcome: ChatClientResponse | None) -> None:
    if outcome is None:
        raise AdvisorChainError(
            "A model round's stream ended without TurnFinished: an advisor inside the tool loop dropped it"
        )


def _turn_start(messages: Sequence[Message]) -> int:
    """The turn begins at the last user message (where tool-call limits start counting too)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return index
    return len(messages)


def _round_request(request: ChatClientRequest, messages: Sequence[Message]) -> ChatClientRequest:
    """The request of a round that sends ``messages``."""
    prompt = request.prompt
    if messages is prompt.messages:
        return request
    return ChatClientRequest(_with_messages(prompt, messages), request.context)


def _counted(response: ChatClientResponse, state: LoopState) -> ChatResponse | None:
    """The round's reply, its usage added to the turn's."""
    chat = response.chat_response
    if chat is not None:
        usage = chat.metadata.usage
        if usage is not None:
            state.usage = state.usage + usage if state.saw_usage else usage  # the first is the sum as it is
            state.saw_usage = True
    return chat


def _with_messages(prompt: Prompt, messages: Sequence[Message]) -> Prompt:
    """``prompt.with_messages(messages)`` without pydantic's ``model_construct`` field walk: both parts
    are models already, and every round makes one (or two, with the tool batch's prompt)."""
    if messages is prompt.messages:
        return prompt
    return built.prompt(messages=tuple(messages), options=prompt.options)


def _first_output(response: ChatClientResponse) -> AssistantMessage | None:
    chat = response.chat_response
    result = chat.result if chat is not None else None
    return result.output if result is not None else None


def _without_tools(request: ChatClientRequest) -> ChatClientRequest:
    """The request for the loop's last round: tools stay defined (the history refers to them) but
    the model is told not to call any."""
    options = request.prompt.options
    assert isinstance(options, ToolCallingChatOptions)
    return request.with_prompt(request.prompt.with_options(options.model_copy(update={"tool_choice": "none"})))


def _after_crash(
    decisions: ToolCallDecisions, started: Sequence[str], callbacks: Sequence[ToolCallback], pending: PendingToolCalls
) -> ToolCallDecisions:
    """The decisions a take-over runs: a started call whose outcome is unknown is not run again (the
    model reads :data:`UNKNOWN_OUTCOME_MESSAGE`), unless its tool declares itself ``idempotent``."""
    idempotent = {c.name for c in callbacks if c.metadata.idempotent}
    names = {call.id: call.name for call in pending.calls}
    unknown = {i for i in started if names.get(i) not in idempotent}
    return ToolCallDecisions.of(
        ToolCallDecision.deny(d.id, UNKNOWN_OUTCOME_MESSAGE, approver=d.approver, reason="outcome unknown")
        if d.id in unknown and d.allowed
        else d
        for d in decisions.decisions
    )


def _check_tool_identities(pending: PendingToolCalls, callbacks: Sequence[ToolCallback]) -> None:
    """Refuse the resume when a paused call's tool is now another one (an MCP tool whose server,
    original name or schema changed): the person approved the tool as it was."""
    by_name = {callback.name: callback for callback in callbacks}
    for call in pending.calls:
        if not call.tool_identity:
            continue
        callback = by_name.get(call.name)
        now = callback.identity if callback is not None else "(no such tool)"
        if now != call.tool_identity:
            raise ToolCallDecisionError(
                f"Tool {call.name!r} changed since the turn paused ({call.tool_identity} is now {now}); nothing ran"
            )
