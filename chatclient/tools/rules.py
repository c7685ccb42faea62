"""Deciding a gated call without a pause: standing approval rules and an inline approval handler.

A **rule** says "always allow" or "always deny" a tool (a name, or a pattern such as ``delete_*``),
optionally only for some arguments. Two kinds, because a predicate cannot be stored:

- *standing rules in code* (``ChatClient.builder().always_allow(tool, when=predicate)``): any
  predicate over the parsed arguments; they live as long as the client;
- *conversation rules* (``ToolCallDecision.allow(id, remember="conversation")``, or
  ``ConversationRules.always_allow(...)``): data, stored in the conversation's log on its memory
  backend: the tool pattern and an optional argument match (keys whose values must be equal).

A rule records who made it (approver id and roles). Its decision goes through the same checks as
a person's on resume (the authorizer, the audit with ``by_rule``), so a rule made by someone who may
not decide that tool decides nothing: the call pauses for a person.

An **approval handler** (``approval_handler=`` on the builder or a request) is asked when rules
leave a gated call undecided; it gets the pending state and returns decisions (or ``None`` to pause).
One that raises or outlasts its ``timeout`` denies the gated calls with the reason.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from .approval import Approver, approver_id, roles_of
from .confirmation import PendingToolCalls, ToolCallDecision, ToolCallDecisions

__all__ = [
    "ApprovalHandler",
    "ApprovalRule",
    "Approvals",
    "aask_handler",
    "ask_handler",
    "failed_decisions",
    "remembered_rule_id",
    "rule_candidates",
]

ArgumentsPredicate = Callable[[Mapping[str, Any]], bool]
ApprovalHandler = Callable[
    [PendingToolCalls], Union[ToolCallDecisions, Awaitable[Union[ToolCallDecisions, None]], None]  # noqa: UP007
]
"""Receives the paused calls, returns their decisions (``None``: pause for a person as usual)."""


class ApprovalRule(BaseModel):
    """One standing rule: allow (or deny) calls to ``tool`` whose arguments match.

    ``tool`` is a name or an ``fnmatch`` pattern (``delete_*``). ``arguments`` (stored) matches when
    each given key is present with an equal value; ``when`` (code only, never stored) is a predicate
    over the parsed arguments. ``approver``/``roles`` say who made the rule: its decisions are
    authorized as that person's."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)
    id: str = Field(default_factory=lambda: "rule_" + secrets.token_hex(6))
    tool: str
    allow: bool
    arguments: dict[str, JsonValue] | None = None
    message: str | None = None
    """For a deny: what the model reads (default: the usual denial text)."""
    approver: str | None = None
    roles: tuple[str, ...] = ()
    created_at: float = Field(default_factory=time.time)
    when: ArgumentsPredicate | None = Field(default=None, exclude=True)

    @classmethod
    def made_by(cls, tool: str, allow: bool, approver: object | None, **fields: Any) -> ApprovalRule:
        """A rule recording ``approver`` (a ``str``, an ``Approver`` or the app's principal)."""
        return cls(
            tool=tool, allow=allow, approver=approver_id(approver), roles=tuple(sorted(roles_of(approver))), **fields
        )

    @property
    def stored(self) -> bool:
        """A rule with a predicate lives in code only: it cannot be written to a database."""
        return self.when is None

    def matches(self, name: str, arguments: str) -> bool:
        if not fnmatch.fnmatchcase(name, self.tool):
            return False
        if self.arguments is None and self.when is None:
            return True
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError:
            return False
        if not isinstance(parsed, dict):
            return False
        if self.arguments is not None and any(parsed.get(k, _MISSING) != v for k, v in self.arguments.items()):
            return False
        return self.when is None or bool(self.when(parsed))

    def decision(self, call_id: str) -> ToolCallDecision:
        """This rule's decision on a call: made by the rule's author, marked ``rule=self.id``."""
        who = Approver(self.approver, self.roles) if self.approver is not None else None
        reason = f"rule {self.id}"
        if self.allow:
            return ToolCallDecision(call_id, True, approver=who, reason=reason, rule=self.id)
        return ToolCallDecision(call_id, False, message=self.message, approver=who, reason=reason, rule=self.id)


_MISSING = object()


def rule_candidates(pending: PendingToolCalls, rules: Iterable[ApprovalRule]) -> dict[str, list[ApprovalRule]]:
    """For each gated call of ``pending`` that some rule matches, the matching rules in the order
    they are tried: deny rules first (a "never" outweighs an "always"), each kind in the order given."""
    ordered = list(rules)
    found: dict[str, list[ApprovalRule]] = {}
    for call in pending.calls:
        if call.requires_confirmation:
            matching = [r for r in ordered if r.matches(call.name, call.arguments)]
            if matching:
                found[call.id] = [r for r in matching if not r.allow] + [r for r in matching if r.allow]
    return found


def remembered_rule_id(pending: PendingToolCalls, call_id: str) -> str:
    """The id of the rule a ``remember=`` decision makes: the same for every try of one resume."""
    import hashlib

    return "rule_" + hashlib.sha256(f"{pending.nonce}\0{call_id}".encode()).hexdigest()[:12]


def failed_decisions(pending: PendingToolCalls, why: str) -> ToolCallDecisions:
    """What a failed handler means: the gated calls denied, saying why (the others were never gated)."""
    message = f"The call was not approved: {why}."
    return ToolCallDecisions.of(
        ToolCallDecision.deny(c.id, message, approver="approval_handler", reason=why)
        if c.requires_confirmation
        else ToolCallDecision.allow(c.id, reason="needed no confirmation")
        for c in pending.calls
    )


@dataclass(frozen=True)
class Approvals:
    """How a request decides gated calls without a pause (in the request context when configured)."""

    rules: tuple[ApprovalRule, ...] = ()
    store: Any = None
    """A ``ConversationRules`` (sync or async): the conversation's stored rules, and where a
    ``remember="conversation"`` decision is written."""
    handler: ApprovalHandler | None = None
    timeout: float | None = None

    def with_rules(self, *rules: ApprovalRule) -> Approvals:
        return Approvals((*self.rules, *rules), self.store, self.handler, self.timeout)

    def with_handler(self, handler: ApprovalHandler, timeout: float | None) -> Approvals:
        return Approvals(self.rules, self.store, handler, timeout)

    def with_store(self, store: Any) -> Approvals:
        return Approvals(self.rules, store, self.handler, self.timeout)


Remember = Literal["conversation"]


def ask_handler(handler: ApprovalHandler, pending: PendingToolCalls, timeout: float | None) -> ToolCallDecisions | None:
    """The handler's decisions, on this thread (an ``async def`` one on a loop of its own). With a
    ``timeout`` a sync handler runs in a worker thread, which is left behind when it overruns
    (a thread cannot be stopped): the gated calls are denied all the same."""
    import asyncio

    from .._sync import run_sync

    try:
        if asyncio.iscoroutinefunction(handler):
            return _checked(run_sync(lambda: asyncio.wait_for(_awaited(handler, pending), timeout)))
        if timeout is None:
            return _checked(_settled(handler(pending)))
        from concurrent.futures import ThreadPoolExecutor
        from concurrent.futures import TimeoutError as FutureTimeout

        pool = ThreadPoolExecutor(1, thread_name_prefix="chatclient-approval")
        try:
            return _checked(pool.submit(lambda: _settled(handler(pending))).result(timeout))
        except FutureTimeout:
            raise TimeoutError from None
        finally:
            pool.shutdown(wait=False)
    except Exception as exc:  # a handler that fails decides nothing but a denial
        return failed_decisions(pending, _failure(exc, timeout))


async def aask_handler(
    handler: ApprovalHandler, pending: PendingToolCalls, timeout: float | None
) -> ToolCallDecisions | None:
    """:func:`ask_handler` on the request's loop: a sync handler runs in a worker thread, so one that
    waits for a person (``input()``) does not stall the loop."""
    import asyncio

    try:
        if asyncio.iscoroutinefunction(handler):
            outcome = await asyncio.wait_for(_awaited(handler, pending), timeout)
        else:
            outcome = await asyncio.wait_for(asyncio.to_thread(lambda: handler(pending)), timeout)
            if inspect.isawaitable(outcome):
                outcome = await asyncio.wait_for(outcome, timeout)
        return _checked(outcome)
    except Exception as exc:
        return failed_decisions(pending, _failure(exc, timeout))


async def _awaited(handler: ApprovalHandler, pending: PendingToolCalls) -> Any:
    outcome = handler(pending)
    return await outcome if inspect.isawaitable(outcome) else outcome


def _settled(outcome: Any) -> Any:
    """A sync handler's result; an awaitable it returned is run to completion."""
    if not inspect.isawaitable(outcome):
        return outcome
    from .._sync import run_sync

    awaitable = outcome
    return run_sync(lambda: awaitable)


def _checked(outcome: Any) -> ToolCallDecisions | None:
    if outcome is None or isinstance(outcome, ToolCallDecisions):
        return outcome
    if isinstance(outcome, ToolCallDecision):
        return ToolCallDecisions.of(outcome)
    if isinstance(outcome, Iterable) and not isinstance(outcome, (str, bytes, Mapping)):
        items = list(outcome)
        if all(isinstance(item, ToolCallDecision) for item in items):
            return ToolCallDecisions.of(items)
    raise TypeError(f"the approval handler returned {type(outcome).__name__}, not ToolCallDecisions or None")


def _failure(exc: Exception, timeout: float | None) -> str:
    if isinstance(exc, TimeoutError):
        return f"the approval handler did not answer within {timeout:g} s"
    return f"the approval handler failed ({type(exc).__name__}: {exc})"
