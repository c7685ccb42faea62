"""``SessionMemoryAdvisor``: a conversation's history before each turn, the whole turn after it.

It sits outside the tool loop (``AdvisorOrder.MEMORY``). Before the turn it reads the view (the
last ``window`` messages, cut where a turn begins) and puts it between the system message and the
new user message. After the turn it appends every message of the turn (user message, each tool-call
message, each tool result, the answer) in one batch whose ids come from the turn id. While a
confirmation is pending it stores nothing; the resumed turn keeps its id, so it is written once
with those same ids and a retried resume cannot duplicate it. On a resume the prompt is the one the
turn began with (history included), so nothing is prepended twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal, NamedTuple

from .._builders import prompt as build_prompt
from ..advisor import (
    AdvisorOrder,
    AsyncCallNext,
    AsyncStreamNext,
    CallNext,
    ChatClientRequest,
    ChatClientResponse,
    ContextKeys,
    StreamNext,
)
from ..durable import TurnContinuation
from ..errors import ChatClientError, ConfigurationError
from ..events import StreamEvent, TurnFinished
from ..messages import Message, SystemMessage, UserMessage
from ..turn import Turn, new_turn_id
from ._compacting import acompact, aread_log, compact, read_log, view_after
from ._pause import paused_event_in, paused_in
from ._store_calls import aappend_turn, append_failed, read_failed
from .compaction import Compaction, view_of
from .journal import (
    AsyncTurnJournalStore,
    ConversationJournals,
    TurnJournalStore,
    UnfinishedTurns,
    continuation_of,
    unfinished_of,
)
from .lease import (
    AsyncLeaseKeeper,
    AsyncSessionLease,
    LeaseKeeper,
    SessionLease,
    SessionLeaseLostError,
    aacquire,
    acquire,
    new_token,
)
from .log import CONVERSATION_ID, AppendResult, NewEvent, SessionEvent, check_session_id, turn_events
from .repository import AsyncSessionRepository, SessionRepository, ThreadedSessionRepository
from .usage import asession_usage, session_usage, usage_event
from .window import WindowViews, messages_of, read_size

__all__ = ["CONVERSATION_ID", "ConcurrencyPolicy", "SessionMemoryAdvisor"]

_log = logging.getLogger("chatclient.memory")

# The context keys a turn reads, as module constants: a class attribute read is not specialised
# on CPython 3.11 (two type lookups each time), a global read is.
_TURN_ID, _TURN, _RESUME = ContextKeys.TURN_ID, ContextKeys.TURN, ContextKeys.RESUME
_BUDGET, _CONVERSATION_USAGE = ContextKeys.USAGE_BUDGET, ContextKeys.CONVERSATION_USAGE
_JOURNALS = ContextKeys.TURN_JOURNALS


def _journaled(request: ChatClientRequest) -> bool:
    """A continuation of a memory-backed turn: it claims (and, once stored, clears) the turn's journal
    even when the request offers no tools."""
    resume = request.context.get(_RESUME)
    return resume is not None and getattr(resume[0], "journal_version", None) is not None


def _conversation_budget(request: ChatClientRequest) -> bool:
    """A per-conversation budget is to be checked: the loop needs the stored turns' usage (one read
    of the conversation's usage, only then)."""
    budget = request.context.get(_BUDGET)
    return budget is not None and budget.per_conversation is not None


_PENDING = ContextKeys.PENDING_TOOL_CALLS

ConcurrencyPolicy = Literal["append", "raise", "serialize"]
"""``append``: never lose a turn (the default); ``raise``: ``VersionConflict`` when another turn
was stored on the conversation after this one read its history (the turn is not stored);
``serialize``: one turn at a time per conversation, under a lease held from before the history is
read until the turn is written, so each turn sees the one before it. The lease (``lease_ttl``) is
renewed every ``lease_renew_every`` seconds (a third of the ttl) while the turn runs and checked
before the write; a lease lost meanwhile raises ``SessionLeaseLostError`` after the turn is stored."""


class _Plan(NamedTuple):  # built every turn: a tuple is the cheapest immutable record
    conversation_id: str
    turn_id: str
    base_version: int | None
    new_messages: tuple[Message, ...]
    read: Sequence[SessionEvent] = ()
    boundary: SessionEvent | None = None
    journals: ConversationJournals | None = None
    """The conversation's turn journals as handed to the tool loop (a request with tools)."""


class SessionMemoryAdvisor:
    """Memory for conversations, on any :class:`SessionRepository` (sync or async).

    ``window`` bounds the messages read per turn (``None``: the whole log); usage events take no
    message's place. The conversation id comes
    from the request: ``spec.conversation(id)`` (or the ``CONVERSATION_ID`` advisor param); a request
    without one is refused, never stored under a shared default.

    ``compaction`` (a :class:`~chatclient.memory.compaction.Compaction`) runs after a turn is
    written, on the version that write returned: the view is then read from the latest boundary.
    """

    def __init__(
        self,
        repository: SessionRepository | AsyncSessionRepository,
        *,
        window: int | None = 100,
        concurrency: ConcurrencyPolicy = "append",
        order: int = AdvisorOrder.MEMORY,
        compaction: Compaction | None = None,
        lease_ttl: float = 300.0,
        lease_timeout: float = 60.0,
        lease_renew_every: float | None = None,
        unfinished_turns: UnfinishedTurns = "raise",
    ) -> None:
        if window is not None and window <= 0:
            raise ConfigurationError(f"window must be a positive number of events or None, got {window}")
        if concurrency == "serialise":  # type: ignore[comparison-overlap]
            concurrency = "serialize"
        if concurrency not in ("append", "raise", "serialize"):
            raise ConfigurationError(f"concurrency must be 'append', 'raise' or 'serialize', got {concurrency!r}")
        if concurrency == "serialize" and not callable(getattr(repository, "try_lease", None)):
            raise ConfigurationError(
                f"concurrency='serialize' needs a repository with leases (try_lease/release_lease); "
                f"{type(repository).__name__} has none"
            )
        if lease_ttl <= 0 or (lease_renew_every is not None and not 0 < lease_renew_every < lease_ttl):
            raise ConfigurationError(
                "lease_ttl must be positive and lease_renew_every between 0 and lease_ttl, "
                f"got {lease_ttl} and {lease_renew_every}"
            )
        self.lease_ttl, self.lease_timeout = lease_ttl, lease_timeout
        self.lease_renew_every = lease_renew_every if lease_renew_every is not None else lease_ttl / 3
        self.repository = repository
        self._async = asyncio.iscoroutinefunction(getattr(repository, "append", None))
        self._sync: SessionRepository | None = None if self._async else repository  # type: ignore[assignment]
        self.window, self.concurrency = window, concurrency
        self.order = order  # an attribute, not a property: the client reads it to sort every request's chain
        if compaction is not None and not isinstance(compaction, Compaction):
            raise ConfigurationError(f"compaction must be a Compaction(trigger, strategy), got {compaction!r}")
        self.compaction = compaction
        if unfinished_turns not in ("raise", "allow"):
            raise ConfigurationError(f"unfinished_turns must be 'raise' or 'allow', got {unfinished_turns!r}")
        self.unfinished_turns: UnfinishedTurns = unfinished_turns
        self._journaled = isinstance(repository, (TurnJournalStore, AsyncTurnJournalStore))
        # Under "serialize" no other turn of the conversation runs now: a held journal is a dead runner's.
        self._blocking = ("running", "recorded", "stopped") if concurrency == "serialize" else ("stopped",)
        self._views = WindowViews(window) if window is not None else None
        self._read = read_size(window)  # the events a windowed turn reads

    @property
    def name(self) -> str:
        return type(self).__name__

    # ------------------------------------------------------------------ unfinished turns

    def unfinished_turn(self, conversation_id: str, *, after_crash: bool = False) -> TurnContinuation | None:
        """The conversation's turn that stopped after tools ran (``None``: none), as a continuation:
        ``client.prompt().continue_turn(it)`` finishes it; no recorded tool runs again. A turn whose
        tools were started and never recorded raises ``TurnInProgressError`` unless ``after_crash``
        (its process is known to be gone): the calls it started are then reported to the model as of
        unknown outcome (an ``idempotent`` tool runs again)."""
        store: TurnJournalStore = self._sync_repository()  # type: ignore[assignment]
        return self._first_unfinished(conversation_id, store.turn_journals(_checked(conversation_id)), after_crash)

    async def aunfinished_turn(self, conversation_id: str, *, after_crash: bool = False) -> TurnContinuation | None:
        store: AsyncTurnJournalStore = self._async_repository()  # type: ignore[assignment]
        journals = await store.turn_journals(_checked(conversation_id))
        return self._first_unfinished(conversation_id, journals, after_crash)

    def abandon_turn(self, conversation_id: str, turn_id: str) -> None:
        """Drop an unfinished turn's journal: it is never stored, and new turns go on. Its recorded
        tool results are lost with it (read them from ``unfinished_turn`` first if you need them)."""
        store: TurnJournalStore = self._sync_repository()  # type: ignore[assignment]
        store.clear_turn_journal(_checked(conversation_id), turn_id)

    async def aabandon_turn(self, conversation_id: str, turn_id: str) -> None:
        store: AsyncTurnJournalStore = self._async_repository()  # type: ignore[assignment]
        await store.clear_turn_journal(_checked(conversation_id), turn_id)

    def _first_unfinished(
        self, conversation_id: str, journals: list[tuple[str, int, str]], after_crash: bool
    ) -> TurnContinuation | None:
        if not self._journaled:
            raise ConfigurationError(f"{type(self.repository).__name__} keeps no turn journals")
        found = unfinished_of(journals)
        if not found:
            return None
        turn_id, version, entry = found[0]
        return continuation_of(conversation_id, turn_id, version, entry, after_crash)

    # ------------------------------------------------------------------ logic, written once

    @staticmethod
    def conversation_of(request: ChatClientRequest) -> str:
        conversation_id = request.context.get(CONVERSATION_ID)
        if type(conversation_id) is str and conversation_id in _CHECKED:  # _checked()'s usual case, inline
            return conversation_id
        if not isinstance(conversation_id, str) or not conversation_id:
            raise ConfigurationError(
                "SessionMemoryAdvisor needs a conversation id: call spec.conversation(id) "
                f"(or pass advisors(params={{{CONVERSATION_ID!r}: id}}))"
            )
        return _checked(conversation_id)  # the same ids on every backend, before the model runs

    def _plan(
        self,
        request: ChatClientRequest,
        events: Sequence[SessionEvent] | None,
        boundary: SessionEvent | None = None,
        conversation_id: str | None = None,
    ) -> tuple[ChatClientRequest, _Plan]:
        """The request with the history in it, and what to store after the turn. ``events`` is
        ``None`` on a resume (nothing read, nothing prepended)."""
        if conversation_id is None:
            conversation_id = self.conversation_of(request)
        turn_id = request.context.get(_TURN_ID)
        context = request.context
        journals = None
        if self._journaled and (request.prompt.tool_callbacks or (events is None and _journaled(request))):
            journals = ConversationJournals(
                self.repository, conversation_id, self._async, self.unfinished_turns, self._blocking
            )
            context = {**context, _JOURNALS: journals}
            request = ChatClientRequest(request.prompt, context)
        if events is None:
            return request, _Plan(conversation_id, str(turn_id or ""), None, (), (), None, journals)
        # No turn id is made here: the tool loop makes the turn's own (its Turn carries it); only a
        # turn without the loop needs one, made when it is stored (``_to_store``).
        turn_id = str(turn_id or "")
        base = events[-1].seq if events else 0
        fields = request.prompt.__dict__  # one attribute read through pydantic's __getattr__ hook, not two
        prompt = fields["messages"]
        split = 0
        if prompt and isinstance(prompt[0], SystemMessage):  # the system messages stay first
            split = len(prompt)
            for index, message in enumerate(prompt):
                if not isinstance(message, SystemMessage):
                    split = index
                    break
        history: Sequence[Message]
        if self.compaction is not None:
            history = view_of(events, boundary, self.window).messages()
        elif self._views is not None:
            history = self._views.of(conversation_id, events)
        else:
            history = messages_of(events)
        messages = (*prompt[:split], *history, *prompt[split:]) if split else (*history, *prompt)
        request = ChatClientRequest(build_prompt(messages=messages, options=fields["options"]), context)
        new = prompt[split:] if split else prompt
        return request, _tuple_new(_Plan, (conversation_id, turn_id, base, new, events, boundary, journals))

    def _to_store(self, plan: _Plan, response: ChatClientResponse) -> list[NewEvent]:
        """The turn's events, its usage last; none while the turn waits for a confirmation."""
        context = response.context
        if context.get(_PENDING) is not None:  # paused: stored once resumed
            return []
        turn = context.get(_TURN)
        if isinstance(turn, Turn):
            turn_id, events = turn.id, turn_events(turn.id, turn.messages)
        else:
            # No tool loop ran: the turn is the request's new messages and the answer.
            generation = response.chat_response.result if response.chat_response is not None else None
            answer = generation.output if generation is not None else None
            users = [m for m in plan.new_messages if isinstance(m, UserMessage)]
            turn_id = plan.turn_id or new_turn_id()
            events = turn_events(turn_id, [*users[-1:], *([answer] if answer is not None else [])])
        usage = usage_event(turn_id, response.chat_response)
        if usage is not None and events:
            events.append(usage)
        return events

    def _expected(self, plan: _Plan) -> int | None:
        return plan.base_version if self.concurrency == "raise" else None

    @staticmethod
    def _resuming(request: ChatClientRequest) -> bool:
        return request.context.get(_RESUME) is not None

    # ------------------------------------------------------------------ sync drivers

    def _sync_repository(self) -> SessionRepository:
        if self._sync is not None:
            return self._sync
        if self._async:
            raise ConfigurationError("An async session repository serves acall()/astream(); use a sync one for call()")
        return self.repository  # type: ignore[return-value]

    def _before(self, request: ChatClientRequest) -> tuple[ChatClientRequest, _Plan]:
        if _conversation_budget(request):
            totals = session_usage(self._sync_repository(), self.conversation_of(request))
            request = request.with_context({_CONVERSATION_USAGE: (totals.calls, totals.total)})
        if request.context.get(_RESUME) is not None:  # a resume: nothing read, nothing prepended
            return self._plan(request, None)
        repository = self._sync if self._sync is not None else self._sync_repository()
        conversation_id = self.conversation_of(request)
        try:
            if self.compaction is not None:
                boundary, events = read_log(repository, conversation_id, self.window)
                return self._plan(request, events, boundary)
            events = repository.events(conversation_id, last=self._read)
        except ChatClientError:
            raise
        except Exception as exc:  # the driver's failure: a memory error, before the model is called
            raise read_failed(exc, repository, conversation_id) from exc
        return self._plan(request, events, None, conversation_id)

    def _after(
        self, plan: _Plan, response: ChatClientResponse, keeper: LeaseKeeper | None = None
    ) -> ChatClientResponse:
        events = self._to_store(plan, response)
        if not events and response.is_paused:
            if plan.journals is not None and plan.journals.opened:  # the paused state holds the turn now
                plan.journals.clear(response.context[_PENDING].turn_id)
            return paused_in(response, plan.conversation_id)
        lost = keeper is not None and bool(events) and not keeper.still_held()  # the fence, before the write
        if events:
            repository = self._sync if self._sync is not None else self._sync_repository()
            expected = plan.base_version if self.concurrency == "raise" else None
            try:  # append_turn()'s first attempt, inline
                result = repository.append(plan.conversation_id, events, expected_version=expected)
            except Exception as exc:
                result = append_failed(exc, repository, plan.conversation_id, events, expected, response)
            if self.compaction is not None and result.appended:
                view = view_after(plan.read, plan.boundary, events, result)
                if view is None:  # another turn landed meanwhile: compact what is there now
                    boundary, read = read_log(repository, plan.conversation_id, self.window)
                    view, result = view_of(read, boundary, self.window), _at(read)
                compact(repository, plan.conversation_id, self.compaction, view, result.version)
            if plan.journals is not None and plan.journals.opened:  # stored whole: the journal is done
                plan.journals.clear(events[0].turn_id)
        if lost:
            raise SessionLeaseLostError(plan.conversation_id, self.lease_ttl, response)
        return response

    @contextmanager
    def _lease(self, request: ChatClientRequest) -> Iterator[LeaseKeeper | None]:
        """Under ``serialize``: the conversation's lease, from before the read to after the write,
        renewed while the turn runs."""
        if self.concurrency != "serialize":
            yield None
            return
        conversation_id, token = self.conversation_of(request), new_token()
        lease: SessionLease = self._sync_repository()  # type: ignore[assignment]
        acquire(lease, conversation_id, token, ttl=self.lease_ttl, timeout=self.lease_timeout)
        keeper = LeaseKeeper(lease, conversation_id, token, self.lease_ttl, self.lease_renew_every)
        try:
            yield keeper
        finally:
            keeper.stop()
            lease.release_lease(conversation_id, token)

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        if self.concurrency != "serialize":  # no lease to hold: skip its context manager
            request, plan = self._before(request)
            return self._after(plan, next_(request))
        with self._lease(request) as keeper:
            request, plan = self._before(request)
            return self._after(plan, next_(request), keeper)

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        with self._lease(request) as keeper:
            request, plan = self._before(request)
            for event in next_(request):
                if isinstance(event, TurnFinished):
                    yield TurnFinished(self._after(plan, event.response, keeper))
                else:
                    yield paused_event_in(event, plan.conversation_id)

    # ------------------------------------------------------------------ async drivers

    def _async_repository(self) -> AsyncSessionRepository:
        if self._async:
            return self.repository  # type: ignore[return-value]
        return ThreadedSessionRepository(self.repository)  # type: ignore[arg-type]

    async def _abefore(self, request: ChatClientRequest) -> tuple[ChatClientRequest, _Plan]:
        if _conversation_budget(request):
            totals = await asession_usage(self.repository, self.conversation_of(request))
            request = request.with_context({_CONVERSATION_USAGE: (totals.calls, totals.total)})
        if self._resuming(request):
            return self._plan(request, None)
        conversation_id = self.conversation_of(request)
        repository = self._async_repository()
        try:
            if self.compaction is not None:
                boundary, events = await aread_log(repository, conversation_id, self.window)
                return self._plan(request, events, boundary)
            events = await repository.events(conversation_id, last=self._read)
        except ChatClientError:
            raise
        except Exception as exc:  # the driver's failure: a memory error, before the model is called
            raise read_failed(exc, self.repository, conversation_id) from exc
        return self._plan(request, events, None, conversation_id)

    async def _aafter(
        self, plan: _Plan, response: ChatClientResponse, keeper: AsyncLeaseKeeper | None = None
    ) -> ChatClientResponse:
        events = self._to_store(plan, response)
        if not events:
            if not response.is_paused:
                return response
            if plan.journals is not None and plan.journals.opened:  # the paused state holds the turn now
                cleared = plan.journals.clear(response.context[_PENDING].turn_id)
                if cleared is not None:
                    await cleared
            return paused_in(response, plan.conversation_id)
        lost = keeper is not None and not await keeper.still_held()  # the fence, before the write
        await _shielded(self._awrite(plan, events, response))
        if lost:
            raise SessionLeaseLostError(plan.conversation_id, self.lease_ttl, response)
        return response

    async def _awrite(self, plan: _Plan, events: list[NewEvent], response: ChatClientResponse) -> None:
        repository = self._async_repository()
        result = await aappend_turn(
            repository, plan.conversation_id, events, self._expected(plan), response, owner=self.repository
        )
        if self.compaction is not None and result.appended:
            view = view_after(plan.read, plan.boundary, events, result)
            if view is None:
                boundary, read = await aread_log(repository, plan.conversation_id, self.window)
                view, result = view_of(read, boundary, self.window), _at(read)
            await acompact(repository, plan.conversation_id, self.compaction, view, result.version)
        if plan.journals is not None and plan.journals.opened:  # stored whole: the journal is done
            cleared = plan.journals.clear(events[0].turn_id)
            if cleared is not None:
                await cleared

    @asynccontextmanager
    async def _alease(self, request: ChatClientRequest) -> AsyncIterator[AsyncLeaseKeeper | None]:
        if self.concurrency != "serialize":
            yield None
            return
        conversation_id, token = self.conversation_of(request), new_token()
        lease: AsyncSessionLease = self._async_repository()  # type: ignore[assignment]
        await aacquire(lease, conversation_id, token, ttl=self.lease_ttl, timeout=self.lease_timeout)
        keeper = AsyncLeaseKeeper(lease, conversation_id, token, self.lease_ttl, self.lease_renew_every)
        try:
            yield keeper
        finally:
            await keeper.stop()
            await lease.release_lease(conversation_id, token)

    async def aadvise_call(self, request: ChatClientRequest, next_: AsyncCallNext) -> ChatClientResponse:
        async with self._alease(request) as keeper:
            request, plan = await self._abefore(request)
            return await self._aafter(plan, await next_(request), keeper)

    async def aadvise_stream(self, request: ChatClientRequest, next_: AsyncStreamNext) -> AsyncIterator[StreamEvent]:
        async with self._alease(request) as keeper:
            request, plan = await self._abefore(request)
            async for event in next_(request):
                if isinstance(event, TurnFinished):
                    event = TurnFinished(await self._aafter(plan, event.response, keeper))
                else:
                    event = paused_event_in(event, plan.conversation_id)
                yield event


async def _shielded(write: Coroutine[Any, Any, None]) -> None:
    """Run the turn's write to its end even if the caller is cancelled meanwhile (the model answered
    and tools ran: losing the turn then would be worse than finishing a write nobody waits for; it
    is idempotent by its ids). The cancellation is re-raised once the write is done."""
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            await asyncio.shield(task)
            break
        except asyncio.CancelledError as exc:
            if task.done():  # the write itself was cancelled (by its own store): nothing to wait for
                raise
            cancelled = exc  # a cancellation of the caller: keep waiting for the write
        except Exception as failed:
            if cancelled is None:
                raise
            # Nobody waits for the answer any more: the failure is logged, the cancellation goes on.
            _log.warning("The turn's write failed after its caller was cancelled", exc_info=True)
            raise cancelled from failed
    if cancelled is not None:
        raise cancelled


_tuple_new = tuple.__new__  # a record straight from its values (no NamedTuple.__new__ frame)
_CHECKED: dict[str, str] = {}
"""Conversation ids already checked (bounded): a conversation's every turn checks the same id."""


def _checked(conversation_id: str) -> str:
    """``check_session_id(conversation_id)``, once per id (the usual turn: a dict lookup)."""
    if _CHECKED.get(conversation_id) is not None and type(conversation_id) is str:
        return conversation_id
    check_session_id(conversation_id)
    if len(_CHECKED) >= 4096:
        _CHECKED.clear()
    _CHECKED[conversation_id] = conversation_id
    return conversation_id


def _at(read: Sequence[SessionEvent]) -> AppendResult:
    """The version a fresh read saw (its last event is the log's last)."""
    return AppendResult(read[-1].seq if read else 0, 0, 0)
