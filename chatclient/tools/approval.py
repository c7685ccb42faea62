"""Who may decide: authorizing an approver's decision on a paused call before anything runs.

The application authenticates the person and passes a principal with the decisions
(``ToolCallDecisions.of(..., approver=Approver("ana", roles={"manager"}))``, or any object of its
own). A :class:`ToolCallAuthorizer` says whether that principal may make that decision on that call;
rules come from the tool (``@tool(requires_confirmation="manager")`` names a role, a callable is a
predicate) and from the manager's builder (``decision_authorizer(...)``), and combine with ``&``
(all must agree) or ``|`` (one suffices), like confirmation policies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..messages import ToolCall
from .callback import ToolCallback

__all__ = ["Approver", "DecisionRequest", "ToolCallAuthorizer", "approver_id", "roles_of"]


@dataclass(frozen=True, init=False)
class Approver:
    """A ready-made principal: the id recorded with each decision and the roles the person holds."""

    id: str
    roles: frozenset[str]

    def __init__(self, id: str, roles: Iterable[str] = ()) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "roles", frozenset(roles))

    def __str__(self) -> str:
        return self.id


def approver_id(principal: object | None) -> str | None:
    """What is recorded for a principal: a ``str`` itself, else its ``id`` attribute, else ``str()``."""
    if principal is None or isinstance(principal, str):
        return principal
    ident = getattr(principal, "id", None)
    return ident if isinstance(ident, str) else str(principal)


def roles_of(principal: object | None) -> frozenset[str]:
    """The roles of a principal: its ``roles`` attribute (or ``"roles"`` key), else none."""
    roles = principal.get("roles") if isinstance(principal, Mapping) else getattr(principal, "roles", None)
    if isinstance(roles, str):
        return frozenset((roles,))
    return frozenset(r for r in roles if isinstance(r, str)) if isinstance(roles, Iterable) else frozenset()


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """One decision to authorize: who, on which call (as it would run: edited arguments), which tool."""

    approver: object | None
    call: ToolCall
    tool: ToolCallback | None
    allowed: bool
    reason: str | None = None

    @property
    def roles(self) -> frozenset[str]:
        return roles_of(self.approver)

    @property
    def arguments(self) -> Any:
        """The call's arguments, parsed (``{}`` when they are not JSON)."""
        try:
            return json.loads(self.call.arguments or "{}")
        except ValueError:
            return {}


Rule = Callable[[DecisionRequest], bool]


class ToolCallAuthorizer:
    """Says whether an approver may make a decision. Combine with ``&`` (all) and ``|`` (any)."""

    def __init__(self, refusal: Callable[[DecisionRequest], str | None], description: str) -> None:
        self._refusal = refusal
        self._description = description

    def refusal(self, request: DecisionRequest) -> str | None:
        """Why the decision is refused, or ``None`` when it is authorized."""
        return self._refusal(request)

    def authorizes(self, request: DecisionRequest) -> bool:
        return self._refusal(request) is None

    def __and__(self, other: ToolCallAuthorizer) -> ToolCallAuthorizer:
        return ToolCallAuthorizer.all_of(self, other)

    def __or__(self, other: ToolCallAuthorizer) -> ToolCallAuthorizer:
        return ToolCallAuthorizer.any_of(self, other)

    def __repr__(self) -> str:
        return f"ToolCallAuthorizer({self._description})"

    @classmethod
    def of(cls, authorizer: ToolCallAuthorizer | Rule) -> ToolCallAuthorizer:
        """An authorizer as given, or a plain predicate over a :class:`DecisionRequest` wrapped by
        :meth:`from_predicate`; anything else is refused here, at build time, not at the first resume."""
        if isinstance(authorizer, ToolCallAuthorizer):
            return authorizer
        if callable(authorizer):
            return cls.from_predicate(authorizer)
        raise TypeError(
            f"a decision authorizer must be a ToolCallAuthorizer or a predicate "
            f"(DecisionRequest) -> bool, not {type(authorizer).__name__}: {authorizer!r}"
        )

    @classmethod
    def from_predicate(cls, predicate: Rule, description: str | None = None) -> ToolCallAuthorizer:
        """Decisions for which ``predicate(request)`` is true."""
        text = description or f"approval by {getattr(predicate, '__name__', 'a predicate')}"
        return cls(lambda request: None if predicate(request) else f"needs {text}", text)

    @classmethod
    def requiring_role(cls, *roles: str, tools: Iterable[str] | None = None) -> ToolCallAuthorizer:
        """The approver holds one of ``roles`` — for calls to ``tools`` only, when given."""
        wanted, only = frozenset(roles), frozenset(tools) if tools is not None else None
        text = _roles_text(wanted)

        def refusal(request: DecisionRequest) -> str | None:
            if only is not None and request.call.name not in only:
                return None
            return None if request.roles & wanted else f"needs {text}"

        return cls(refusal, text + (f" for {sorted(only)}" if only is not None else ""))

    @classmethod
    def from_tool_metadata(cls) -> ToolCallAuthorizer:
        """The tool's own rule: ``requires_confirmation="role"`` or a predicate; ``True`` lets anyone decide."""

        def refusal(request: DecisionRequest) -> str | None:
            rule = request.tool.metadata.approved_by if request.tool is not None else None
            if rule is None:
                return None
            if isinstance(rule, str):
                return None if rule in request.roles else f"needs role {rule!r}"
            return None if rule(request) else f"needs approval by {getattr(rule, '__name__', 'the tool predicate')}"

        return cls(refusal, "from_tool_metadata")

    @classmethod
    def anyone(cls) -> ToolCallAuthorizer:
        return cls(lambda request: None, "anyone")

    @classmethod
    def all_of(cls, *authorizers: ToolCallAuthorizer) -> ToolCallAuthorizer:
        parts = tuple(authorizers)

        def refusal(request: DecisionRequest) -> str | None:
            return next((why for part in parts if (why := part.refusal(request)) is not None), None)

        return cls(refusal, " & ".join(p._description for p in parts))

    @classmethod
    def any_of(cls, *authorizers: ToolCallAuthorizer) -> ToolCallAuthorizer:
        parts = tuple(authorizers)
        text = " | ".join(p._description for p in parts)

        def refusal(request: DecisionRequest) -> str | None:
            return None if any(p.authorizes(request) for p in parts) else f"needs {text}"

        return cls(refusal, text)


def _roles_text(roles: frozenset[str]) -> str:
    names = sorted(roles)
    return f"role {names[0]!r}" if len(names) == 1 else f"one of the roles {names}"
