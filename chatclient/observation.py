"""The instrumentation seam: one observer interface, called at every point worth tracing.

Register observers on the client (``ChatClient.builder(model).observers(...)``) or per request
(``.observers(...)``). Each ``*_started`` method may return a token (a span, a start time); the
matching ``*_finished`` method gets it back, so an observer keeps no table of its own.

Points: a client call (``call``/``stream``/``acall``/``astream``, and resumes), each advisor
invocation (``advisor_started``/``advisor_finished``), each model round (the prompt sent, the
first chunk of a stream, the response or the error), each tool invocation (start, end or error,
duration), each retry of a provider request, and the confirmation pause, each decision (allowed,
denied or refused as unauthorized; approver, reason, time: a :class:`DecisionRecord`) and the
resume. With no observer registered nothing of this runs: the chain is built without it; and the
advisor and first-chunk points are wired in only when an observer overrides them.

An observer that can record nothing at all right now (a tracer with no tracer or meter provider
configured) says so with ``is_active()``; when none is active, requests run exactly as without
observers. An observer with nothing to do for a call (a tracer whose root span does not record) returns
:data:`QUIET` from ``call_started``: when every observer does, the rest of the call runs as if
there were none (the chain takes its plain paths) and only ``call_finished`` is skipped for it.

Observers run inline on the request's path: keep them quick, and do not raise (an observer that
raises is logged and skipped, so instrumentation never breaks a request).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ._redact import redact_mapping

if TYPE_CHECKING:
    from .envelope import ChatClientResponse
    from .messages import ToolCall, ToolResult
    from .model import ChatModel
    from .prompt import Prompt
    from .responses import ChatResponse
    from .tools.confirmation import PendingToolCalls, ToolCallDecision

__all__ = [
    "QUIET",
    "AdvisorInfo",
    "CallInfo",
    "ChatObserver",
    "DecisionOutcome",
    "DecisionRecord",
    "FallbackInfo",
    "ModelCallInfo",
    "Observers",
    "RetrievalInfo",
    "RetryInfo",
    "ToolInvocationInfo",
    "notify_fallback",
    "notify_retry",
]

_log = logging.getLogger("chatclient.observation")

_NO_CONTEXT: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CallInfo:
    """A client call: its mode (``"call"``, ``"stream"``, ``"acall"``, ``"astream"``) and prompt.

    ``context`` is the request's context as the call starts (advisor params included, e.g. the
    conversation id of ``spec.conversation(id)``): the same mapping, not a copy, so it costs nothing.
    """

    mode: str
    prompt: Prompt
    resumed: bool = False
    context: Mapping[str, Any] = field(default_factory=lambda: _NO_CONTEXT)

    def __repr__(self) -> str:
        """The dataclass repr, but the context (advisor params an application chose) shown with
        credential-looking values masked, as the prompt's options are."""
        context = redact_mapping(self.context)
        return f"CallInfo(mode={self.mode!r}, prompt={self.prompt!r}, resumed={self.resumed!r}, context={context!r})"


@dataclass(frozen=True, slots=True)
class ModelCallInfo:
    """One model round: the prompt the model receives, and whether it streams."""

    prompt: Prompt
    streaming: bool
    model: str | None = None
    chat_model: ChatModel | None = None
    """The provider's model object (what it is, where it sends), for instrumentation."""


@dataclass(frozen=True, slots=True)
class AdvisorInfo:
    """One advisor invocation: its name and order, and the mode it runs in."""

    name: str
    order: int
    mode: str


@dataclass(frozen=True, slots=True)
class ToolInvocationInfo:
    """One tool call about to run, with the arguments it runs with."""

    call: ToolCall
    arguments: str

    @property
    def name(self) -> str:
        return self.call.name


@dataclass(frozen=True, slots=True)
class RetrievalInfo:
    """One search of a store by a retrieval advisor (or a retriever tool): the query it ran, how many
    documents it asked for, and the store's name (its class)."""

    query: str
    top_k: int
    store: str
    source: str = ""
    """What searched: the advisor's or the tool's name."""


@dataclass(frozen=True, slots=True)
class RetryInfo:
    """A provider request that failed and will be tried again after ``wait`` seconds."""

    attempt: int
    error: BaseException
    wait: float
    provider: str | None = None


@dataclass(frozen=True, slots=True)
class FallbackInfo:
    """A model of a fallback chain failed with ``error`` and the request goes to ``next`` (the
    ``position``-th model of the chain, counted from 0)."""

    failed: ChatModel
    error: BaseException
    next: ChatModel
    position: int


DecisionOutcome = Literal["allowed", "denied", "refused"]


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One decision on a paused call, as an audit log keeps it.

    ``outcome`` is ``"allowed"`` or ``"denied"`` for a decision that took effect, ``"refused"`` for
    one the authorizer turned down (then ``refusal`` says why, and nothing of the reply ran).
    ``approver`` is the principal as the application gave it, ``approver_id`` what is recorded.
    """

    call_id: str
    tool: str
    outcome: DecisionOutcome
    approver_id: str | None
    reason: str | None
    at: float
    """When it was decided on (``time.time()``)."""
    arguments: str
    """The arguments the call runs (or would have run) with: the edited ones, if edited."""
    requires_confirmation: bool
    decision: ToolCallDecision | None
    """The decision as given; ``None`` for one filled in by the completeness policy."""
    approver: object | None = None
    refusal: str | None = None
    by_rule: str | None = None
    """The id of the standing rule that made the decision (``None``: a person or a handler)."""

    def __str__(self) -> str:
        why = f" ({self.refusal})" if self.refusal else ""
        rule = f" under rule {self.by_rule}" if self.by_rule else ""
        return f"{self.outcome} {self.tool}({self.call_id}) by {self.approver_id or 'nobody'}{rule}{why}"


class _Quiet:
    __slots__ = ()

    def __repr__(self) -> str:
        return "QUIET"


QUIET: Any = _Quiet()
"""Returned from ``call_started``: this observer needs nothing more of this call (not even its
``call_finished``). When every observer says so, the call runs as unobserved."""

_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("chatclient_quiet_call", default=False)


def call_is_quiet() -> bool:
    """Whether the current client call is unobserved (every observer returned ``QUIET``)."""
    return _quiet.get()


class _CallTokens(list[Any]):
    """The tokens of ``call_started``, and whether the call around this one was quiet."""

    __slots__ = ("outer_quiet",)
    outer_quiet: bool


class ChatObserver:
    """Override the points you need; every method is a no-op."""

    def is_active(self) -> bool:
        """Whether this observer may record anything now; asked several times per request, so keep
        it to an attribute read. While no observer is active, none is called."""
        return True

    def call_started(self, info: CallInfo) -> Any:
        return None

    def call_finished(
        self, token: Any, info: CallInfo, response: ChatClientResponse | None, error: BaseException | None
    ) -> None:
        pass

    def advisor_started(self, info: AdvisorInfo) -> Any:
        """An advisor is entered (an advisor inside the tool loop: once per round)."""
        return None

    def advisor_finished(self, token: Any, info: AdvisorInfo, error: BaseException | None) -> None:
        """The advisor returned (in a stream: passed the final ``TurnFinished`` on) or raised."""

    def model_started(self, info: ModelCallInfo) -> Any:
        return None

    def model_first_chunk(self, token: Any, info: ModelCallInfo) -> None:
        """A streamed model round delivered its first event (time to first chunk)."""

    watch_chunks: bool = False
    """Set true to be told of every streamed chunk after the first (``model_chunk``); off by
    default, as it is a call per chunk."""

    def model_chunk(self, token: Any, info: ModelCallInfo) -> None:
        """A streamed model round delivered another chunk (only while ``watch_chunks`` is true)."""

    def model_finished(
        self, token: Any, info: ModelCallInfo, response: ChatResponse | None, error: BaseException | None
    ) -> None:
        pass

    def tool_started(self, info: ToolInvocationInfo) -> Any:
        return None

    def tool_finished(
        self,
        token: Any,
        info: ToolInvocationInfo,
        result: str | ToolResult | None,
        error: BaseException | None,
        duration: float,
    ) -> None:
        """``result`` is what the tool returned (``error`` what it raised); ``duration`` in seconds."""

    def retry(self, info: RetryInfo) -> None:
        pass

    def fallback(self, info: FallbackInfo) -> None:
        """A model of a ``FallbackChatModel`` failed and the next one is asked; the response's
        ``metadata.extra["fallback.model"]`` says which answered."""

    def retrieval_started(self, info: RetrievalInfo) -> Any:
        """A store is searched (once per query: a multi-query expansion searches several times)."""
        return None

    def retrieval_finished(
        self, token: Any, info: RetrievalInfo, documents: Sequence[Any] | None, error: BaseException | None
    ) -> None:
        """The search returned ``documents`` (``chatclient.retrieval.Document``, best first) or raised."""

    def turn_paused(self, pending: PendingToolCalls) -> Mapping[str, str] | None:
        """The turn paused for confirmation. What this returns is added to ``pending.metadata`` and
        travels with the pending state (e.g. a trace context, to link the resume to the pause)."""
        return None

    def decision_made(self, record: DecisionRecord) -> None:
        """Every decision on a paused call: allowed, denied, or refused as unauthorized."""

    def turn_resumed(self, pending: PendingToolCalls) -> None:
        pass


@dataclass(frozen=True)
class Observers:
    """Several observers as one; each is called in turn and a failing one is logged and skipped."""

    observers: tuple[ChatObserver, ...] = field(default=())
    watch_advisors: bool = field(init=False, default=False)
    """Whether any observer overrides the advisor points (else the chain does not report them)."""
    watch_first_chunk: bool = field(init=False, default=False)
    watch_chunks: bool = field(init=False, default=False)
    """Whether any observer asks for every chunk (``ChatObserver.watch_chunks``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "watch_chunks", any(o.watch_chunks for o in self.observers))
        object.__setattr__(self, "watch_advisors", _overrides(self.observers, "advisor_started", "advisor_finished"))
        object.__setattr__(self, "watch_first_chunk", _overrides(self.observers, "model_first_chunk"))

    def __bool__(self) -> bool:
        """True when some observer is active: the chain is built with observers only then."""
        for observer in self.observers:  # noqa: SIM110 - a hot path: no generator
            if observer.is_active():
                return True
        return False

    def _each(self, method: str, *args: Any) -> list[Any]:
        results = []
        for observer in self.observers:
            try:
                results.append(getattr(observer, method)(*args))
            except Exception:
                _log.exception("Observer %r failed in %s; skipped", observer, method)
                results.append(None)
        return results

    def _finish(self, method: str, tokens: Sequence[Any], *args: Any) -> None:
        for observer, token in zip(self.observers, tokens, strict=False):
            try:
                getattr(observer, method)(token, *args)
            except Exception:
                _log.exception("Observer %r failed in %s; skipped", observer, method)

    def call_started(self, info: CallInfo) -> list[Any]:
        tokens = _CallTokens()
        quiet = True
        for observer in self.observers:
            try:
                token = observer.call_started(info)
            except Exception:
                _log.exception("Observer %r failed in %s; skipped", observer, "call_started")
                token = None
            tokens.append(token)
            if token is not QUIET:
                quiet = False
        tokens.outer_quiet = _quiet.get()
        _quiet.set(quiet)
        return tokens

    def call_finished(
        self, tokens: Sequence[Any], info: CallInfo, response: ChatClientResponse | None, error: BaseException | None
    ) -> None:
        if isinstance(tokens, _CallTokens):
            _quiet.set(tokens.outer_quiet)  # a set, not a reset: a stream may end in another context
        for observer, token in zip(self.observers, tokens, strict=False):
            if token is QUIET:
                continue
            try:
                observer.call_finished(token, info, response, error)
            except Exception:
                _log.exception("Observer %r failed in %s; skipped", observer, "call_finished")

    def advisor_started(self, info: AdvisorInfo) -> list[Any]:
        return [] if _quiet.get() else self._each("advisor_started", info)

    def advisor_finished(self, tokens: Sequence[Any], info: AdvisorInfo, error: BaseException | None) -> None:
        self._finish("advisor_finished", tokens, info, error)

    def model_started(self, info: ModelCallInfo) -> list[Any]:
        return [] if _quiet.get() else self._each("model_started", info)

    def model_first_chunk(self, tokens: Sequence[Any], info: ModelCallInfo) -> None:
        self._finish("model_first_chunk", tokens, info)

    def model_chunk(self, tokens: Sequence[Any], info: ModelCallInfo) -> None:
        self._finish("model_chunk", tokens, info)

    def model_finished(
        self, tokens: Sequence[Any], info: ModelCallInfo, response: ChatResponse | None, error: BaseException | None
    ) -> None:
        self._finish("model_finished", tokens, info, response, error)

    def tool_started(self, info: ToolInvocationInfo) -> list[Any]:
        return [] if _quiet.get() else self._each("tool_started", info)

    def tool_finished(
        self,
        tokens: Sequence[Any],
        info: ToolInvocationInfo,
        result: str | ToolResult | None,
        error: BaseException | None,
        duration: float,
    ) -> None:
        self._finish("tool_finished", tokens, info, result, error, duration)

    def retry(self, info: RetryInfo) -> None:
        if not _quiet.get():
            self._each("retry", info)

    def fallback(self, info: FallbackInfo) -> None:
        if not _quiet.get():
            self._each("fallback", info)

    def retrieval_started(self, info: RetrievalInfo) -> list[Any]:
        return [] if _quiet.get() else self._each("retrieval_started", info)

    def retrieval_finished(
        self, tokens: Sequence[Any], info: RetrievalInfo, documents: Sequence[Any] | None, error: BaseException | None
    ) -> None:
        self._finish("retrieval_finished", tokens, info, documents, error)

    def turn_paused(self, pending: PendingToolCalls) -> PendingToolCalls:
        """Tell every observer; the pending state comes back with what they added to its metadata."""
        if _quiet.get():
            return pending
        added: dict[str, str] = {}
        for extra in self._each("turn_paused", pending):
            if extra:
                added.update(extra)
        if not added:
            return pending
        return pending.model_copy(update={"metadata": {**pending.metadata, **added}})

    def decision_made(self, record: DecisionRecord) -> None:
        if not _quiet.get():
            self._each("decision_made", record)

    def turn_resumed(self, pending: PendingToolCalls) -> None:
        if not _quiet.get():
            self._each("turn_resumed", pending)


def _overrides(observers: Sequence[ChatObserver], *methods: str) -> bool:
    return any(getattr(type(o), m) is not getattr(ChatObserver, m) for o in observers for m in methods)


NO_OBSERVERS = Observers()


class Watch:
    """One observed piece of work (a call, an advisor, a model round): started when made, finished
    once, with what :meth:`returns` set or with the error that ended its ``with`` block, or earlier
    by :meth:`finish` (a stream is over for its reader at ``TurnFinished``). The start/finish
    bookkeeping written once for every mode, sync and async, plain and streamed."""

    __slots__ = ("_done", "_finished", "_info", "_result", "tokens")

    def __init__(self, started: Callable[[Any], Any], finished: Callable[..., None], info: Any) -> None:
        """``finished(tokens, info, result, error)``: a ``*_finished`` method of :class:`Observers`."""
        self.tokens = started(info)
        """What the observers' ``*_started`` returned; their other points of this work take it too."""
        self._finished = finished
        self._info = info
        self._result: Any = None
        self._done = False

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        self.finish(error)

    def returns(self, result: Any) -> None:
        """What the work came to, reported when it finishes without an error."""
        self._result = result

    def finish(self, error: BaseException | None = None) -> None:
        if not self._done:
            self._done = True
            self._finished(self.tokens, self._info, None if error is not None else self._result, error)


class _Unwatched(Watch):
    """The :class:`Watch` of work nothing observes: one shared instance that does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        pass

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        pass

    def returns(self, result: Any) -> None:
        pass

    def finish(self, error: BaseException | None = None) -> None:
        pass


UNWATCHED: Watch = _Unwatched()

_current: contextvars.ContextVar[Observers] = contextvars.ContextVar("chatclient_observers", default=NO_OBSERVERS)
"""The observers of the model request being sent, for code below the chain (provider retries)."""


@contextmanager
def observing(observers: Observers) -> Iterator[None]:
    """Make ``observers`` visible to provider code for the duration of one model request."""
    token = _current.set(observers)
    try:
        yield
    finally:
        _current.reset(token)


def notify_retry(attempt: int, error: BaseException, wait: float, provider: str | None = None) -> None:
    """Called by provider transports before sleeping for a retry; free when nothing observes."""
    observers = _current.get()
    if observers:
        observers.retry(RetryInfo(attempt, error, wait, provider))


def notify_fallback(failed: ChatModel, error: BaseException, next_model: ChatModel, position: int) -> None:
    """Called by ``FallbackChatModel`` before it asks the next model; free when nothing observes."""
    observers = _current.get()
    if observers:
        observers.fallback(FallbackInfo(failed, error, next_model, position))
