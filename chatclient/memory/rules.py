"""A conversation's standing approval rules, kept in its own session log on any memory backend.

A rule is an event of type ``approval_rule`` (the rule as JSON: tool pattern, allow or deny, an
optional argument match, who made it); revoking it appends ``approval_rule_revoked``. So the rules
live and expire with the conversation, on every backend the memory runs on (in memory, SQLite,
PostgreSQL, Redis), and the message history never sees them (memory reads ``message`` events only).

A predicate (``when=``) cannot be stored: rules with one live in code, on the client's builder.
Pruning a log below a compaction boundary also prunes the rules made before it: make them again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from ..errors import ConfigurationError
from ..tools.approval import approver_id
from ..tools.rules import ApprovalRule
from .log import IdempotencyMismatch, NewEvent, SessionEvent, check_session_id
from .repository import AsyncSessionRepository, SessionRepository

__all__ = ["AsyncConversationRules", "ConversationRules"]

RULE, REVOKED = "approval_rule", "approval_rule_revoked"
_TYPES = (RULE, REVOKED)
_TURN = "approval_rules"


class ConversationRules:
    """The standing approval rules of conversations, in a :class:`SessionRepository`.

    Give it to the client (``ChatClient.builder().approval_rules(rules)``) so a gated call that a rule
    decides runs without a pause and ``remember="conversation"`` decisions are kept here."""

    def __init__(self, repository: SessionRepository) -> None:
        if _is_async(repository):
            raise ConfigurationError("An async session repository needs AsyncConversationRules")
        self.repository = repository

    def always_allow(
        self,
        conversation_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        approver: object | None = None,
    ) -> ApprovalRule:
        """Allow calls to ``tool`` (name or pattern) in this conversation, as ``approver``'s decision."""
        return self.add(conversation_id, ApprovalRule.made_by(tool, True, approver, arguments=arguments))

    def always_deny(
        self,
        conversation_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        message: str | None = None,
        approver: object | None = None,
    ) -> ApprovalRule:
        """Deny calls to ``tool`` (name or pattern) in this conversation; the model reads ``message``."""
        rule = ApprovalRule.made_by(tool, False, approver, arguments=arguments, message=message)
        return self.add(conversation_id, rule)

    def add(self, conversation_id: str, rule: ApprovalRule) -> ApprovalRule:
        """Keep ``rule``; adding a rule id kept already changes nothing (a retried resume's)."""
        with suppress(IdempotencyMismatch):
            self.repository.append(check_session_id(conversation_id), [_rule_event(rule)])
        return rule

    def list(self, conversation_id: str) -> list[ApprovalRule]:
        """The rules in force, oldest first (revoked ones left out)."""
        return in_force(self.repository.events(check_session_id(conversation_id), types=_TYPES))

    def revoke(self, conversation_id: str, rule_id: str, *, approver: object | None = None) -> bool:
        """Revoke a rule; ``False`` when no rule of that id is in force."""
        if all(rule.id != rule_id for rule in self.list(conversation_id)):
            return False
        self.repository.append(check_session_id(conversation_id), [_revoked_event(rule_id, approver)])
        return True


class AsyncConversationRules:
    """:class:`ConversationRules` on an :class:`AsyncSessionRepository`: the same methods, awaited."""

    def __init__(self, repository: AsyncSessionRepository) -> None:
        if not _is_async(repository):
            raise ConfigurationError("A sync session repository needs ConversationRules")
        self.repository = repository

    async def always_allow(
        self,
        conversation_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        approver: object | None = None,
    ) -> ApprovalRule:
        return await self.add(conversation_id, ApprovalRule.made_by(tool, True, approver, arguments=arguments))

    async def always_deny(
        self,
        conversation_id: str,
        tool: str,
        *,
        arguments: dict[str, Any] | None = None,
        message: str | None = None,
        approver: object | None = None,
    ) -> ApprovalRule:
        rule = ApprovalRule.made_by(tool, False, approver, arguments=arguments, message=message)
        return await self.add(conversation_id, rule)

    async def add(self, conversation_id: str, rule: ApprovalRule) -> ApprovalRule:
        with suppress(IdempotencyMismatch):
            await self.repository.append(check_session_id(conversation_id), [_rule_event(rule)])
        return rule

    async def list(self, conversation_id: str) -> list[ApprovalRule]:
        return in_force(await self.repository.events(check_session_id(conversation_id), types=_TYPES))

    async def revoke(self, conversation_id: str, rule_id: str, *, approver: object | None = None) -> bool:
        if all(rule.id != rule_id for rule in await self.list(conversation_id)):
            return False
        await self.repository.append(check_session_id(conversation_id), [_revoked_event(rule_id, approver)])
        return True


def in_force(events: Sequence[SessionEvent]) -> list[ApprovalRule]:
    """The rules of ``events`` (oldest first) that no later event revoked."""
    rules: dict[str, ApprovalRule] = {}
    for event in events:
        if event.type == RULE:
            rule = ApprovalRule.model_validate_json(event.payload)
            rules[rule.id] = rule
        elif event.type == REVOKED:
            rules.pop(json.loads(event.payload)["id"], None)
    return list(rules.values())


def _rule_event(rule: ApprovalRule) -> NewEvent:
    if not rule.stored:
        raise ConfigurationError(
            f"Rule {rule.id} for {rule.tool!r} has a when= predicate, which cannot be stored: keep it in code "
            "(ChatClient.builder().always_allow(..., when=...)), or store an argument match (arguments=...)"
        )
    return NewEvent(f"{RULE}:{rule.id}", _TURN, rule.model_dump_json(), RULE)


def _revoked_event(rule_id: str, approver: object | None) -> NewEvent:
    payload = json.dumps({"id": rule_id, "approver": approver_id(approver)})
    return NewEvent(f"{REVOKED}:{rule_id}", _TURN, payload, REVOKED)


def _is_async(repository: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(getattr(repository, "append", None))
