"""``ToolCallingManager``: runs the tool calls of one model reply and returns the grown conversation.

Each batch is first *planned* (tools looked up, limits checked, confirmation decided: nothing has run
yet, so a batch can be refused or paused as a whole) and then *run* (concurrently, results in the
reply's order).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pydantic import JsonValue
from typing_extensions import Self

import chatclient._builders as built

from .._trusted import fast_frozen
from ..errors import (
    ChatClientError,
    ConfigurationError,
    ToolArgumentsError,
    ToolCallDecisionError,
    ToolCallLimitExceededError,
    ToolCallUnauthorizedError,
    ToolError,
    UnknownToolError,
)
from ..messages import (
    AssistantMessage,
    Message,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    ToolResult,
    UserMessage,
    distinct_call_ids,
)
from ..observation import NO_OBSERVERS, DecisionOutcome, DecisionRecord, Observers
from ..responses import ChatResponse, FinishReason, Generation, GenerationMetadata
from ._execution import Invocation, Outcome, arun_all, run_all, tool_execution_error
from ._limits import ToolCallLimitPolicy, ToolCallLimits, canonical_arguments
from ._processor import DefaultToolExceptionProcessor, ToolExceptionProcessor
from ._results import normalize_arguments
from ._retry import RETRY_KEY, ToolRetriesExceededError, ToolRetry, retries_in_turn, retry_text
from .approval import DecisionRequest, Rule, ToolCallAuthorizer, approver_id
from .callback import ToolCallback
from .confirmation import (
    DEFAULT_PENDING_EXPIRES_IN,
    DecisionCompleteness,
    PendingCall,
    PendingToolCalls,
    ToolCallConfirmationPolicy,
    ToolCallConfirmationRequired,
    ToolCallDecision,
    ToolCallDecisions,
)
from .definition import EMPTY_TOOL_CONTEXT, ToolContext, ToolDefinition

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ..options import ToolCallingChatOptions
    from ..prompt import Prompt

_log = logging.getLogger("chatclient.tools")

__all__ = ["ToolCallingManager", "ToolCallingManagerBuilder", "ToolExecutionResult"]


@fast_frozen
@dataclass(frozen=True, slots=True)
class ToolExecutionResult:
    """The conversation after one batch of tool calls, and what the loop should do next."""

    conversation_history: tuple[Message, ...]
    """The prompt's messages, the assistant message with the calls, and one ``ToolResponseMessage``."""
    return_direct: bool = False
    """Every call of the batch is a ``return_direct`` tool that succeeded: the results are the answer."""
    limit_exceeded: str | None = None
    """The first breach message when a limit was hit under ``FINAL_ANSWER``: the loop should ask the
    model once more, without tools."""

    @property
    def tool_responses(self) -> tuple[ToolResponse, ...]:
        """The responses of the last ``ToolResponseMessage`` (this batch's)."""
        for message in reversed(self.conversation_history):
            if isinstance(message, ToolResponseMessage):
                return message.responses
        return ()

    def build_generations(self) -> tuple[Generation, ...]:
        """One generation per tool result, for returning ``return_direct`` results as the reply."""
        return tuple(
            Generation(
                AssistantMessage(response.response_data),
                GenerationMetadata(
                    finish_reason=FinishReason.RETURN_DIRECT,
                    extra={"tool_id": response.id, "tool_name": response.name},
                ),
            )
            for response in self.tool_responses
        )


@dataclass(frozen=True)
class _Denied:
    """A call that will not run; ``text`` is its result for the model."""

    text: str


@dataclass(slots=True)
class _Step:
    """One call of a planned batch. Not changed once made (``replace`` makes a decided one); not frozen
    only because a frozen dataclass pays an ``object.__setattr__`` per field, per call of every round."""

    call: ToolCall
    target: ToolCallback | ToolError | _Denied
    """The tool to run, the error decided while planning (over a limit, unknown tool), or a denial."""
    gated: bool = False
    arguments: str | None = None
    """Arguments to run with when a person edited them; ``None`` means the model's."""
    record: dict[str, JsonValue] | None = None
    """The decision behind this step, kept in the tool response's metadata."""

    @property
    def run_arguments(self) -> str:
        return self.call.arguments if self.arguments is None else self.arguments

    @property
    def run_call(self) -> ToolCall:
        """The call as it runs: with a person's edited arguments, if any."""
        return self.call if self.arguments is None else self.call.model_copy(update={"arguments": self.arguments})


@dataclass(slots=True)
class _Plan:
    """A batch, planned: nothing of it has run. Not changed once made (see ``_Step``)."""

    message: AssistantMessage
    steps: tuple[_Step, ...]
    context: ToolContext
    limit_exceeded: str | None
    gated: bool = False
    """Some call needs a person's decision."""

    def invocations(self, observers: Observers = NO_OBSERVERS) -> list[Invocation]:
        # Normalised here, once, so no callback ever sees a blank or ``null`` arguments string.
        return [  # not isinstance(ToolCallback): an ABC's check is a Python call, per call of every round
            Invocation(
                target,
                normalize_arguments(step.call.arguments if step.arguments is None else step.arguments),
                self.context,
                step.call,
                observers,
            )
            for step in self.steps
            if not isinstance(target := step.target, (ToolError, _Denied))
        ]


class ToolCallingManager:
    """Executes the tool calls of a model reply: concurrently, within per-turn limits, with failures
    reported to the model (by default) so it can correct itself.

    Stateless and thread-safe: limits are counted from the prompt, so one manager serves every request.
    """

    def __init__(
        self,
        *,
        limits: ToolCallLimits | None = None,
        exception_processor: ToolExceptionProcessor | None = None,
        executor: Executor | None = None,
        confirmation_policy: ToolCallConfirmationPolicy | None = None,
        decision_completeness: DecisionCompleteness = DecisionCompleteness.ALL_REQUIRED,
        pending_expires_in: float | None = DEFAULT_PENDING_EXPIRES_IN,
        decision_authorizer: ToolCallAuthorizer | Rule | None = None,
        require_approver: bool | None = None,
        authorize_denials: bool = False,
        tool_timeout: float | None = None,
    ) -> None:
        """``executor`` runs sync tools in the sync path (default: a shared pool of 64 threads, see
        below).

        Deadlines: a request's ``timeout`` (``ChatOptions.timeout``, ``.timeout(s)`` on a request)
        bounds each of its rounds, the model's and the tools': a batch of tool calls gets ``timeout``
        seconds too. Each call has a timeout: its tool's own (``@tool(timeout=...)``), else this
        manager's ``tool_timeout`` (the default for every tool that sets none), and the request's
        ``timeout`` caps either; the shorter applies. A call still running at its deadline is abandoned
        (each at its own: a quick tool's timeout does not wait for a slower one of the same batch):
        the model is told it timed out, as of any tool failure (a ``ToolExecutionError`` whose
        ``__cause__`` is a ``TimeoutError``: ``DefaultToolExceptionProcessor(rethrow=(TimeoutError,))``
        fails the request instead); an async tool is cancelled; a sync tool runs on in its thread (a
        thread cannot be stopped) and what it returns later is discarded and logged. In the shared
        pool an abandoned call's thread is replaced, so hung tools do not take the capacity other
        requests need, up to 256 abandoned threads still running; at that bound new sync tool calls
        fail at once (the model is told so), until one of them returns. A custom ``executor``'s calls
        are abandoned the same way, but its capacity is its own: nothing replaces their threads.
        Without any deadline nothing is abandoned: a hung sync tool holds its thread.

        ``confirmation_policy`` defaults to ``ToolCallConfirmationPolicy.default()`` (tool metadata,
        plus the tool names and the on/off switch of the environment settings);
        ``pending_expires_in`` (seconds, default an hour; ``None``: never) stamps an expiry on every paused state.

        Decisions on gated calls are authorized by the tools' own rules (``requires_confirmation=
        "role"`` or a predicate) and ``decision_authorizer`` (an authorizer, or a plain predicate over
        a ``DecisionRequest``), all of which must agree.
        ``require_approver`` refuses a decision that names no approver (default: when an authorizer
        is given); ``authorize_denials`` puts denials through the authorizer too (default: anyone
        may deny).
        """
        self._limits = limits or ToolCallLimits()
        self._exception_processor = exception_processor or DefaultToolExceptionProcessor()
        self._executor = executor
        self._policy = confirmation_policy or ToolCallConfirmationPolicy.default()
        self._completeness = decision_completeness
        self._pending_expires_in = pending_expires_in
        metadata_rules = ToolCallAuthorizer.from_tool_metadata()
        if decision_authorizer is not None:
            decision_authorizer = ToolCallAuthorizer.of(decision_authorizer)
        self._authorizer = metadata_rules & decision_authorizer if decision_authorizer else metadata_rules
        self._require_approver = decision_authorizer is not None if require_approver is None else require_approver
        self._authorize_denials = authorize_denials
        if tool_timeout is not None and not tool_timeout > 0:
            raise ConfigurationError(f"tool_timeout must be a positive number of seconds, not {tool_timeout!r}")
        self._tool_timeout = tool_timeout
        self._last_by_name: tuple[tuple[ToolCallback, ...], dict[str, ToolCallback]] | None = None
        self._last_timed: tuple[tuple[ToolCallback, ...], bool] | None = None

    @staticmethod
    def builder() -> ToolCallingManagerBuilder:
        return ToolCallingManagerBuilder()

    @property
    def limits(self) -> ToolCallLimits:
        return self._limits

    def resolve_tool_definitions(self, options: ToolCallingChatOptions) -> list[ToolDefinition]:
        return [callback.definition for callback in options.tool_callbacks]

    @property
    def confirmation_policy(self) -> ToolCallConfirmationPolicy:
        return self._policy

    @property
    def tool_timeout(self) -> float | None:
        return self._tool_timeout

    def tool_deadline(self, prompt: Prompt) -> float | None:
        """Seconds a call of ``prompt``'s tools may take when its tool has no ``timeout`` of its own:
        the shorter of the request's ``timeout`` and this manager's ``tool_timeout`` (``None``:
        unbounded)."""
        options = prompt.options
        request = options.timeout if options is not None else None
        mine = self._tool_timeout
        if request is None or (mine is not None and mine < request):
            return mine
        return request

    def execute_tool_calls(
        self,
        prompt: Prompt,
        chat_response: ChatResponse,
        decisions: ToolCallDecisions | None = None,
        *,
        observers: Observers = NO_OBSERVERS,
    ) -> ToolExecutionResult:
        """Run the calls of the first generation with tool calls; sync tools run in threads.

        ``prompt`` holds the conversation *before* ``chat_response`` (its tools and tool context are
        used). Before anything runs, this raises ``ToolCallLimitExceededError`` (``RAISE`` policy),
        ``ToolCallConfirmationRequired`` when a call needs confirmation and no ``decisions`` are given,
        or ``ToolCallDecisionError`` when the decisions do not fit the reply. Afterwards it raises
        whatever the exception processor raises, once the whole batch has finished.

        The keyword-only extras are part of the SPI, which the tool loop passes on every call:
        ``observers``, the request's observers (report each tool invocation and decision to them).
        A later release may add more, always keyword-only with a default, so a subclass overrides
        this (and :meth:`aexecute_tool_calls`) as ``(self, prompt, chat_response, decisions=None,
        **extras)`` and hands ``**extras`` on to ``super()``.
        """
        plan = self._decide(prompt, chat_response, decisions, observers)
        invocations = plan.invocations(observers)
        limited = self._limit_calls(prompt, invocations)
        ran = run_all(invocations, self._executor, self.tool_deadline(prompt), limited=limited)
        return self._finish(prompt, plan, ran)

    async def aexecute_tool_calls(
        self,
        prompt: Prompt,
        chat_response: ChatResponse,
        decisions: ToolCallDecisions | None = None,
        *,
        observers: Observers = NO_OBSERVERS,
    ) -> ToolExecutionResult:
        """As :meth:`execute_tool_calls` (the same keyword-only extras); async tools run as tasks, sync
        tools in worker threads."""
        plan = self._decide(prompt, chat_response, decisions, observers)
        invocations = plan.invocations(observers)
        timeout = self.tool_deadline(prompt)
        limited = self._limit_calls(prompt, invocations)
        if len(invocations) == 1 and timeout is None and not limited:  # the usual batch: awaited as it is
            return self._finish(prompt, plan, [await invocations[0].arun()])
        return self._finish(prompt, plan, await arun_all(invocations, timeout, limited=limited))

    def _limit_calls(self, prompt: Prompt, invocations: Sequence[Invocation]) -> bool:
        """Give each call of a tool with a ``timeout`` of its own its limit: that timeout, capped by the
        request's; whether any call got one. A tool set without such tools costs one lookup."""
        if not self._timed_tools(prompt.tool_callbacks):
            return False
        options = prompt.options
        request = options.timeout if options is not None else None
        limited = False
        for invocation in invocations:
            own = invocation.callback.metadata.timeout
            if own is not None:
                invocation.limit = own if request is None or own < request else request
                limited = True
        return limited

    def _timed_tools(self, tools: tuple[ToolCallback, ...]) -> bool:
        """Whether a tool of the set has a ``timeout`` of its own, kept for the last tool set seen."""
        last = self._last_timed
        if last is not None and last[0] is tools:
            return last[1]
        timed = any(callback.metadata.timeout is not None for callback in tools)
        self._last_timed = (tools, timed)
        return timed

    def check_decisions(
        self,
        prompt: Prompt,
        chat_response: ChatResponse,
        decisions: ToolCallDecisions,
        *,
        observers: Observers = NO_OBSERVERS,
    ) -> None:
        """Every check a resume makes before anything runs (the decisions fit the reply, edits are
        valid, each approver may decide) without running anything; refusals are reported to
        ``observers``. Raises ``ToolCallDecisionError`` (``ToolCallUnauthorizedError`` for a refusal)."""
        self._apply_decisions(self._plan(prompt, chat_response), decisions, observers, report_applied=False)

    def refusals(
        self,
        prompt: Prompt,
        chat_response: ChatResponse,
        decisions: Mapping[str, ToolCallDecision],
        *,
        observers: Observers = NO_OBSERVERS,
    ) -> dict[str, str]:
        """Which of ``decisions`` (by call id; some calls may have none) the authorizer refuses, and
        why; each refusal is reported to ``observers``. Nothing else is checked, nothing runs."""
        refused: dict[str, str] = {}
        for step in self._plan(prompt, chat_response).steps:
            decision = decisions.get(step.call.id)
            if decision is None:
                continue
            decided = self._decided(step, decision)
            why = self._refusal(step, decided, decision)
            if why is not None:
                refused[step.call.id] = why
                if observers:
                    observers.decision_made(_record(decided, decision, True, "refused", why))
        return refused

    def _decide(
        self, prompt: Prompt, chat_response: ChatResponse, decisions: ToolCallDecisions | None, observers: Observers
    ) -> _Plan:
        plan = self._plan(prompt, chat_response)
        if decisions is not None:
            return self._apply_decisions(plan, decisions, observers)
        if plan.gated:
            pending = self._pending(prompt, plan, chat_response)
            _log.info("Tool calls await a decision: %s", ", ".join(pending.awaiting_ids))
            raise ToolCallConfirmationRequired(pending, chat_response)
        return plan

    def _pending(self, prompt: Prompt, plan: _Plan, chat_response: ChatResponse) -> PendingToolCalls:
        calls = [
            PendingCall(
                id=s.call.id,
                wire_id=s.call.wire_id,
                name=s.call.name,
                arguments=s.call.arguments,
                requires_confirmation=s.gated,
                tool_identity=s.target.identity if isinstance(s.target, ToolCallback) else "",
            )
            for s in plan.steps
        ]
        return PendingToolCalls.create(
            (*prompt.messages, plan.message),
            calls,
            reply_id=chat_response.metadata.id or _reply_fingerprint(plan.message),
            expires_in=self._pending_expires_in,
        )

    def _apply_decisions(
        self, plan: _Plan, decisions: ToolCallDecisions, observers: Observers, *, report_applied: bool = True
    ) -> _Plan:
        """Every check before anything runs: unknown, missing, invalid edits, edits that need a
        person, approvers who may not decide; then each decision is reported to ``observers``."""
        ids = [step.call.id for step in plan.steps]
        unknown = sorted(set(decisions.by_id) - set(ids))
        if unknown:
            raise ToolCallDecisionError(
                f"Decisions for tool calls that are not in the paused reply: {unknown} (the reply has {ids}); "
                "nothing ran"
            )
        decided: list[tuple[_Step, ToolCallDecision, bool]] = []
        refused: list[tuple[_Step, ToolCallDecision, str]] = []
        missing: list[str] = []
        for step in plan.steps:
            decision = decisions.get(step.call.id)
            given = decision is not None
            if decision is None:
                decision = self._default_decision(step)
                if decision is None:
                    missing.append(step.call.id)
                    continue
            decided.append((self._decided(step, decision), decision, given))
            if given and (why := self._refusal(step, decided[-1][0], decision)) is not None:
                refused.append((decided[-1][0], decision, why))
        if missing:
            raise ToolCallDecisionError(
                f"No decision for tool call(s) {missing}: every call of the paused reply needs one "
                f"({self._completeness.name}); nothing ran"
            )
        if refused:
            if observers:
                for step, decision, why in refused:
                    observers.decision_made(_record(step, decision, True, "refused", why))
            raise _unauthorized(refused)
        if observers and report_applied:
            for step, decision, given in decided:
                outcome: DecisionOutcome = "allowed" if decision.allowed else "denied"
                observers.decision_made(_record(step, decision, given, outcome))
        return replace(plan, steps=tuple(step for step, _, _ in decided))

    def _refusal(self, step: _Step, decided: _Step, decision: ToolCallDecision) -> str | None:
        """Why this approver may not make this decision (on ``step``, which becomes ``decided``), or
        ``None``; calls that needed no person are free."""
        if not step.gated:
            return None
        if decision.approver is None and self._require_approver:
            return "the decision names no approver"
        if not decision.allowed and not self._authorize_denials:
            return None
        tool = step.target if isinstance(step.target, ToolCallback) else None
        request = DecisionRequest(decision.approver, decided.run_call, tool, decision.allowed, decision.reason)
        return self._authorizer.refusal(request)

    def _default_decision(self, step: _Step) -> ToolCallDecision | None:
        if self._completeness is DecisionCompleteness.MISSING_MEANS_DENY:
            return ToolCallDecision.deny(step.call.id, reason="no decision given")
        if self._completeness is DecisionCompleteness.MISSING_UNGATED_MEANS_ALLOW and not step.gated:
            return ToolCallDecision.allow(step.call.id, reason="needed no confirmation")
        return None

    def _decided(self, step: _Step, decision: ToolCallDecision) -> _Step:
        record = decision.record()
        if not decision.allowed:
            return replace(step, target=_Denied(decision.deny_message), record=record)
        target = step.target
        if decision.arguments is None or not isinstance(target, ToolCallback):
            return replace(step, record=record)
        try:
            target.validate_arguments(normalize_arguments(decision.arguments))
        except ToolArgumentsError as exc:
            raise ToolCallDecisionError(
                f"The edited arguments for tool call {step.call.id!r} ({step.call.name}) are invalid: {exc}; "
                "nothing ran"
            ) from exc
        edited = step.call.model_copy(update={"arguments": decision.arguments})
        if not step.gated and self._policy.requires_confirmation(edited, target):
            raise ToolCallDecisionError(
                f"The edit turns tool call {step.call.id!r} ({step.call.name}) into one that needs a person's "
                "confirmation, but the call as paused did not: pause it for a person instead; nothing ran"
            )
        return replace(step, arguments=decision.arguments, record=record)

    def _plan(self, prompt: Prompt, chat_response: ChatResponse) -> _Plan:
        message = _tool_call_message(chat_response)
        breaches = self._limits.check(prompt.messages, message.tool_calls)
        callbacks = self._by_name(prompt.tool_callbacks)
        denied = _denied_in_turn(prompt.messages)
        steps: list[_Step] = []
        limit_exceeded: str | None = None
        gated = False
        for call, breach in zip(message.tool_calls, breaches, strict=True):
            if breach is None:
                callback = callbacks.get(call.name)
                if callback is None:
                    steps.append(_Step(call, _unknown_tool(call, callbacks)))
                elif denied and (call.name, canonical_arguments(call.arguments)) in denied:
                    steps.append(_Step(call, _Denied(_ALREADY_DENIED), record={"decision": "deny", "repeat": True}))
                else:
                    needs_person = self._policy.requires_confirmation(call, callback)
                    gated = gated or needs_person
                    steps.append(_Step(call, callback, needs_person))  # positional: no keyword dict a call
                continue
            breach.call_id = call.id
            if self._limits.policy is ToolCallLimitPolicy.RAISE:
                raise breach
            limit_exceeded = limit_exceeded or str(breach)
            steps.append(_Step(call, breach))
        return _Plan(message, tuple(steps), _tool_context(prompt), limit_exceeded, gated)

    def _by_name(self, tools: tuple[ToolCallback, ...]) -> dict[str, ToolCallback]:
        """The request's tools by name, kept for the last tool set seen (a request's set holds for its
        whole turn, and a client's default set for every request): not rebuilt every round."""
        last = self._last_by_name
        if last is not None and last[0] is tools:
            return last[1]
        by_name = {callback.name: callback for callback in tools}
        self._policy.check_tool_names(tools)  # a new tool set: does every gated name still match a tool?
        self._last_by_name = (tools, by_name)
        return by_name

    def _finish(self, prompt: Prompt, plan: _Plan, ran: Sequence[Outcome]) -> ToolExecutionResult:
        outcomes = iter(ran)
        responses: list[ToolResponse] = []
        return_direct = True
        limit_exceeded = plan.limit_exceeded
        retried: dict[str, int] | None = None  # the turn's retries per tool, counted at the first retry
        for step in plan.steps:
            call, target = step.call, step.target
            metadata = dict(step.record) if step.record else {}
            if isinstance(target, (ToolError, _Denied)):  # decided while planning: it did not run
                if isinstance(target, _Denied):
                    response = ToolResponse(id=call.id, name=call.name, response_data=target.text, metadata=metadata)
                else:
                    response = ToolResponse(id=call.id, name=call.name, response_data=self._error_text(call, target),
                                            is_error=True, metadata=metadata)  # fmt: skip
                responses.append(response)
                return_direct = False
                continue
            outcome = next(outcomes)
            if isinstance(outcome, ToolRetry):
                retried = retried if retried is not None else retries_in_turn(prompt.messages)
                response, breach = self._retry_response(call, target, outcome, metadata, retried)
                responses.append(response)
                limit_exceeded = limit_exceeded or breach
                return_direct = False
            elif isinstance(outcome, Exception):
                text = self._error_text(call, outcome)
                responses.append(
                    ToolResponse(id=call.id, name=call.name, response_data=text, is_error=True, metadata=metadata)
                )
                return_direct = False
            else:
                response = _success(call, outcome, step.arguments, metadata)
                responses.append(response)
                return_direct = return_direct and not response.is_error and target.metadata.return_direct
        results = built.tool_response_message(role="tool", responses=tuple(responses), metadata={})
        history = (*prompt.messages, plan.message, results)
        return ToolExecutionResult(history, return_direct, limit_exceeded)

    def _retry_response(
        self,
        call: ToolCall,
        tool: ToolCallback,
        retry: ToolRetry,
        metadata: dict[str, JsonValue],
        retried: dict[str, int],
    ) -> tuple[ToolResponse, str | None]:
        """The model is told what to fix, as a response marked as a retry request; past the tool's
        ``max_retries`` the breach instead (raised under ``RAISE``), and its text for the loop."""
        retry.tool_name, retry.call_id = retry.tool_name or call.name, call.id
        limit = tool.metadata.max_retries
        limit = self._limits.max_tool_retries if limit is None else limit
        so_far = retried.get(call.name, 0)
        if so_far >= limit:
            breach = ToolRetriesExceededError(retry, tool_name=call.name, limit=limit)
            if self._limits.policy is ToolCallLimitPolicy.RAISE:
                raise breach
            _log.warning("%s", breach)
            text = str(breach)
            return ToolResponse(id=call.id, name=call.name, response_data=text, is_error=True, metadata=metadata), text
        retried[call.name] = so_far + 1
        _log.info("Tool %r (call %s) asks for a corrected call: %s", call.name, call.id, retry)
        marked = {**metadata, RETRY_KEY: so_far + 1}
        return ToolResponse(id=call.id, name=call.name, response_data=retry_text(retry), is_error=True,
                            metadata=marked), None  # fmt: skip

    def _error_text(self, call: ToolCall, error: Exception) -> str:
        if isinstance(error, ToolCallLimitExceededError):
            return str(error)  # the loop's own refusal, not a tool failure: no processor
        if not isinstance(error, ToolError):
            if isinstance(error, ChatClientError):
                raise error  # misconfiguration (say, a schema that cannot be built), not a tool failure
            cause = error
            error = tool_execution_error(call.name, cause)
            error.__cause__ = cause
        if error.call_id is None:
            error.call_id = call.id
        text = self._exception_processor(error)  # may raise instead: then the caller reports it
        raised = error.__cause__ if error.__cause__ is not None else error
        trace = (type(raised), raised, raised.__traceback__) if raised.__traceback__ is not None else None
        _log.warning("Tool %r (call %s) failed; the model is told: %s", call.name, call.id, text, exc_info=trace)
        return text


class ToolCallingManagerBuilder:
    """Fluent construction of a :class:`ToolCallingManager`, as in Spring AI."""

    def __init__(self) -> None:
        self._limits = ToolCallLimits()
        self._exception_processor: ToolExceptionProcessor = DefaultToolExceptionProcessor()
        self._executor: Executor | None = None
        self._policy: ToolCallConfirmationPolicy | None = None
        self._completeness = DecisionCompleteness.ALL_REQUIRED
        self._pending_expires_in: float | None = DEFAULT_PENDING_EXPIRES_IN
        self._authorizers: tuple[ToolCallAuthorizer, ...] = ()
        self._require_approver: bool | None = None
        self._authorize_denials = False
        self._tool_timeout: float | None = None

    def max_calls_per_tool(self, limit: int) -> Self:
        """Calls allowed per tool per turn (default 40)."""
        self._limits = replace(self._limits, max_calls_per_tool=limit)
        return self

    def max_calls_for_tool(self, name: str, limit: int) -> Self:
        self._limits = replace(self._limits, max_calls_for_tool={**self._limits.max_calls_for_tool, name: limit})
        return self

    def exclude_tool_from_limit(self, *names: str) -> Self:
        """Exempt tools from the per-tool limit (they still count towards the total)."""
        self._limits = replace(self._limits, excluded_tools=self._limits.excluded_tools | frozenset(names))
        return self

    def max_total_tool_calls(self, limit: int) -> Self:
        """Calls allowed per turn over all tools (default 150)."""
        self._limits = replace(self._limits, max_total_tool_calls=limit)
        return self

    def max_tool_retries(self, retries: int) -> Self:
        """How often per turn a tool may raise ``ToolRetry`` unless it sets its own ``max_retries``
        (default 1)."""
        self._limits = replace(self._limits, max_tool_retries=retries)
        return self

    def max_identical_calls(self, limit: int) -> Self:
        """Calls allowed per turn to one tool with the same arguments (default 3)."""
        self._limits = replace(self._limits, max_identical_calls=limit)
        return self

    def on_limit_exceeded(self, policy: ToolCallLimitPolicy) -> Self:
        self._limits = replace(self._limits, policy=policy)
        return self

    def exception_processor(self, processor: ToolExceptionProcessor) -> Self:
        self._exception_processor = processor
        return self

    def executor(self, executor: Executor) -> Self:
        self._executor = executor
        return self

    def tool_call_confirmation_policy(self, *policies: ToolCallConfirmationPolicy) -> Self:
        """Which calls need a person's confirmation; several policies combine with OR."""
        self._policy = ToolCallConfirmationPolicy.any_of(*policies) if len(policies) != 1 else policies[0]
        return self

    def decision_completeness(self, completeness: DecisionCompleteness) -> Self:
        """What a call without a decision means on resume (default: every call needs one)."""
        self._completeness = completeness
        return self

    def pending_expires_in(self, seconds: float | None) -> Self:
        """Paused states expire this many seconds after the pause (default: an hour; ``None``: never)."""
        self._pending_expires_in = seconds
        return self

    def decision_authorizer(self, *authorizers: ToolCallAuthorizer | Rule) -> Self:
        """Who may decide on gated calls; several authorizers (and the tools' own rules) must all
        agree. A plain predicate over a ``DecisionRequest`` is wrapped as
        ``ToolCallAuthorizer.from_predicate``. Turns on ``require_approver`` unless it is set."""
        self._authorizers = (*self._authorizers, *map(ToolCallAuthorizer.of, authorizers))
        return self

    def require_approver(self, required: bool = True) -> Self:
        """Refuse a decision on a gated call that names no approver (``False`` for applications that
        authorize elsewhere and pass no principal)."""
        self._require_approver = required
        return self

    def authorize_denials(self, authorize: bool = True) -> Self:
        """Put denials through the authorizer too (default: anyone may deny a call)."""
        self._authorize_denials = authorize
        return self

    def tool_timeout(self, seconds: float | None) -> Self:
        """Seconds a tool call may take when its tool sets no ``timeout`` of its own and its request
        no shorter one (default: none); calls still running then are abandoned (see
        :class:`ToolCallingManager`)."""
        self._tool_timeout = seconds
        return self

    def build(self) -> ToolCallingManager:
        authorizers = self._authorizers
        return ToolCallingManager(
            decision_authorizer=ToolCallAuthorizer.all_of(*authorizers) if authorizers else None,
            require_approver=self._require_approver,
            authorize_denials=self._authorize_denials,
            limits=self._limits,
            exception_processor=self._exception_processor,
            executor=self._executor,
            confirmation_policy=self._policy,
            decision_completeness=self._completeness,
            pending_expires_in=self._pending_expires_in,
            tool_timeout=self._tool_timeout,
        )


def _record(
    step: _Step, decision: ToolCallDecision, given: bool, outcome: DecisionOutcome, refusal: str | None = None
) -> DecisionRecord:
    """What the audit seam is told about one decision."""
    return DecisionRecord(
        call_id=step.call.id,
        tool=step.call.name,
        outcome=outcome,
        approver_id=approver_id(decision.approver),
        reason=decision.reason,
        at=time.time(),
        arguments=step.run_arguments,
        requires_confirmation=step.gated,
        decision=decision if given else None,
        approver=decision.approver,
        refusal=refusal,
        by_rule=decision.rule,
    )


def _unauthorized(refused: Sequence[tuple[_Step, ToolCallDecision, str]]) -> ToolCallUnauthorizedError:
    first = refused[0][1].approver
    who = f"approver {approver_id(first)!r}" if first is not None else "a decision without an approver"
    calls = "; ".join(f"{s.call.id!r} ({s.call.name}): {why}" for s, _, why in refused)
    return ToolCallUnauthorizedError(
        f"Not authorized: {who} may not decide tool call(s) {calls}. Nothing ran; the paused state can "
        "still be resumed by someone who may decide",
        approver=approver_id(first),
        refused=[(s.call.id, s.call.name, why) for s, _, why in refused],
    )


_ALREADY_DENIED = (
    "The user already denied this exact call in this turn, so it was not run again. "
    "Do not ask for it again; answer with what you have."
)
_EDITED_NOTE = "Note: the user changed the arguments of this call before it ran; it ran with {arguments}.\n"


def _success(
    call: ToolCall, result: str | ToolResult, edited: str | None, metadata: dict[str, JsonValue]
) -> ToolResponse:
    """The response for a call that ran; a person's edit of the arguments is noted first, for the model."""
    note = "" if edited is None else _EDITED_NOTE.format(arguments=edited)
    if type(result) is str:  # the usual result: every field is a checked value already (the call's are)
        return built.tool_response(id=call.id, name=call.name, response_data=note + result, is_error=False,
                                   metadata=metadata, parts=(), result_metadata={})  # fmt: skip
    if isinstance(result, str):
        return ToolResponse(id=call.id, name=call.name, response_data=note + result, metadata=metadata)
    parts = (TextPart(note.rstrip("\n")), *result.parts) if note else result.parts
    if type(result) is ToolResult:  # its parts and metadata were checked when it was made
        return built.tool_response(id=call.id, name=call.name, response_data=note + result.text,
                                   is_error=result.is_error, metadata=metadata, parts=parts,
                                   result_metadata=dict(result.metadata))  # fmt: skip
    return ToolResponse(
        id=call.id,
        name=call.name,
        response_data=note + result.text,
        is_error=result.is_error,
        metadata=metadata,
        parts=parts,
        result_metadata=result.metadata,
    )


_NONE_DENIED: frozenset[tuple[str, str]] = frozenset()


def _denied_in_turn(history: Sequence[Message]) -> frozenset[tuple[str, str]] | set[tuple[str, str]]:
    """(name, canonical arguments) of the calls a person denied earlier in this turn."""
    denied_ids: set[str] = set()
    calls: dict[str, ToolCall] = {}
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, ToolResponseMessage):
            denied_ids.update(r.id for r in message.responses if r.metadata.get("decision") == "deny")
        elif isinstance(message, AssistantMessage):
            calls.update((c.id, c) for c in message.tool_calls)
    if not denied_ids:
        return _NONE_DENIED  # the usual turn: no set comprehension (a frame) to make an empty set
    return {(calls[i].name, canonical_arguments(calls[i].arguments)) for i in denied_ids if i in calls}


def _reply_fingerprint(message: AssistantMessage) -> str:
    """A stable id for a reply the provider gave no id: derived from its calls."""
    import hashlib

    text = "|".join(f"{c.id}:{c.name}:{canonical_arguments(c.arguments)}" for c in message.tool_calls)
    return "reply-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _tool_call_message(chat_response: ChatResponse) -> AssistantMessage:
    for generation in chat_response.generations:
        calls = generation.output.tool_calls
        if calls:
            if distinct_call_ids(calls) is not calls:
                # An AssistantMessage gives its calls ids of their own; only one built around its
                # checks can get here. Refused: one decision or result must never cover two calls.
                raise ConfigurationError(
                    f"The reply's tool calls do not each have an id of their own ({[c.id for c in calls]}); "
                    "nothing ran. Build replies with AssistantMessage(...), which assigns them."
                )
            return generation.output
    raise ConfigurationError("No tool call requested by the chat model")


def _unknown_tool(call: ToolCall, callbacks: dict[str, ToolCallback]) -> UnknownToolError:
    available = list(callbacks)
    message = f"Unknown tool '{call.name}'. Available tools: {', '.join(available) or 'none'}."
    return UnknownToolError(message, tool_name=call.name, call_id=call.id, available=available)


def _tool_context(prompt: Prompt) -> ToolContext:
    options = prompt.options
    tool_options = _TOOL_OPTIONS[0] if _TOOL_OPTIONS else _tool_options()  # no call once imported
    data = options.tool_context if isinstance(options, tool_options) else None
    return ToolContext(data) if data else EMPTY_TOOL_CONTEXT  # the usual round: no context, nothing to build


_TOOL_OPTIONS: list[type[ToolCallingChatOptions]] = []


def _tool_options() -> type[ToolCallingChatOptions]:
    """``ToolCallingChatOptions``, imported on first use: ``options`` imports this package, so a
    module-level import would be circular (and an import statement per round costs a package lookup)."""
    if not _TOOL_OPTIONS:
        from ..options import ToolCallingChatOptions

        _TOOL_OPTIONS.append(ToolCallingChatOptions)
    return _TOOL_OPTIONS[0]
