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

Observers run inline on the request's path: keep them quick, and do not raise (an observer that
raises is logged and skipped, so instrumentation never breaks a request).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .advisor import ChatClientResponse
    from .messages import ToolCall, ToolResult
    from .model import ChatModel
    from .prompt import Prompt
    from .responses import ChatResponse
    from .tools.confirmation import PendingToolCalls, ToolCallDecision

__all__ = [
    "AdvisorInfo",
    "CallInfo",
    "ChatObserver",
    "DecisionOutcome",
    "DecisionRecord",
    "ModelCallInfo",
    "Observers",
    "RetryInfo",
    "ToolInvocationInfo",
    "notify_retry",
]

_log = logging.getLogger("chatclient.observation")


@dataclass(frozen=True, slots=True)
class CallInfo:
    """A client call: its mode (``"call"``, ``"stream"``, ``"acall"``, ``"astream"``) and prompt."""

    mode: str
    prompt: Prompt
    resumed: bool = False


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
class RetryInfo:
    """A provider request that failed and will be tried again after ``wait`` seconds."""

    attempt: int
    error: BaseException
    wait: float
    provider: str | None = None


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

    def __str__(self) -> str:
        why = f" ({self.refusal})" if self.refusal else ""
        return f"{self.outcome} {self.tool}({self.call_id}) by {self.approver_id or 'nobody'}{why}"


class ChatObserver:
    """Override the points you need; every method is a no-op."""

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "watch_advisors", _overrides(self.observers, "advisor_started", "advisor_finished"))
        object.__setattr__(self, "watch_first_chunk", _overrides(self.observers, "model_first_chunk"))

    def __bool__(self) -> bool:
        return bool(self.observers)

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
        return self._each("call_started", info)

    def call_finished(
        self, tokens: Sequence[Any], info: CallInfo, response: ChatClientResponse | None, error: BaseException | None
    ) -> None:
        self._finish("call_finished", tokens, info, response, error)

    def advisor_started(self, info: AdvisorInfo) -> list[Any]:
        return self._each("advisor_started", info)

    def advisor_finished(self, tokens: Sequence[Any], info: AdvisorInfo, error: BaseException | None) -> None:
        self._finish("advisor_finished", tokens, info, error)

    def model_started(self, info: ModelCallInfo) -> list[Any]:
        return self._each("model_started", info)

    def model_first_chunk(self, tokens: Sequence[Any], info: ModelCallInfo) -> None:
        self._finish("model_first_chunk", tokens, info)

    def model_finished(
        self, tokens: Sequence[Any], info: ModelCallInfo, response: ChatResponse | None, error: BaseException | None
    ) -> None:
        self._finish("model_finished", tokens, info, response, error)

    def tool_started(self, info: ToolInvocationInfo) -> list[Any]:
        return self._each("tool_started", info)

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
        self._each("retry", info)

    def turn_paused(self, pending: PendingToolCalls) -> PendingToolCalls:
        """Tell every observer; the pending state comes back with what they added to its metadata."""
        added: dict[str, str] = {}
        for extra in self._each("turn_paused", pending):
            if extra:
                added.update(extra)
        if not added:
            return pending
        return pending.model_copy(update={"metadata": {**pending.metadata, **added}})

    def decision_made(self, record: DecisionRecord) -> None:
        self._each("decision_made", record)

    def turn_resumed(self, pending: PendingToolCalls) -> None:
        self._each("turn_resumed", pending)


def _overrides(observers: Sequence[ChatObserver], *methods: str) -> bool:
    return any(getattr(type(o), m) is not getattr(ChatObserver, m) for o in observers for m in methods)


NO_OBSERVERS = Observers()

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
