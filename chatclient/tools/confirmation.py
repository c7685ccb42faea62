"""Tool call confirmation: a reply that holds a gated call pauses as a whole until a person decides.

The flow (Spring AI 2.1's, made safe):

1. A :class:`ToolCallConfirmationPolicy` says which calls need a person's confirmation
   (``@tool(requires_confirmation=True)`` by default; by name for MCP tools; by predicate).
2. ``ToolCallingManager.execute_tool_calls`` raises :class:`ToolCallConfirmationRequired` *before any
   call of the reply runs* (the ungated ones too). The tool loop turns that into a normal reply
   whose pending state :func:`awaiting_decision` returns.
3. The application shows the calls, collects a :class:`ToolCallDecision` per call, and resumes with
   ``client.prompt().resume(pending, ToolCallDecisions.of(...))``.

What makes it safe: a :class:`PendingToolCalls` is bound to the exact calls and the conversation by
a digest, and expires (one hour by default); decisions must name exactly the paused calls; stores
hand a state out once, and with a ``secret=`` refuse a state rewritten in storage; a state that
travels through a client can be sealed with an HMAC (see :mod:`chatclient.tools.pending`). Who may
decide is checked before anything runs (see :mod:`chatclient.tools.approval`), and every decision is
reported to the observers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cache
from html import escape
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from .._context_keys import ContextKeys
from .._display import cell, html_code, md_code
from ..errors import (
    ChatClientError,
    PendingConversationMismatchError,
    PendingStateExpiredError,
    PendingStateTamperedError,
    ToolCallDecisionError,
)
from ..messages import AssistantMessage, Message, ToolCall, UserMessage
from ..responses import ChatResponse, Usage
from ._limits import canonical_arguments
from .approval import approver_id
from .callback import ToolCallback

__all__ = [
    "DEFAULT_DENY_MESSAGE",
    "ConfirmationSettings",
    "DecisionCompleteness",
    "PendingCall",
    "PendingToolCalls",
    "ToolCallConfirmationPolicy",
    "ToolCallConfirmationRequired",
    "ToolCallDecision",
    "ToolCallDecisions",
    "UnmatchedToolNameWarning",
    "awaiting_decision",
]

DEFAULT_DENY_MESSAGE: Final = "The user did not allow this tool call."

DEFAULT_PENDING_EXPIRES_IN: Final = 3600.0
"""How long a paused state waits for a person by default (seconds): the stores' default ttl, so a
state and its store agree, and a short replay window for a sealed token; ``None`` means never."""

PENDING_METADATA_KEY: Final = "pending_tool_calls"
AWAITING_IDS_METADATA_KEY: Final = "awaiting_tool_call_ids"


# ---------------------------------------------------------------------------------------- policy


_TOOLS_SETTING: Final = "ConfirmationSettings.tools (CHATCLIENT_TOOL_CONFIRMATION_TOOLS)"
"""Where the settings' tool names come from, as a warning about one of them says."""


class UnmatchedToolNameWarning(UserWarning):
    """A gate names a tool that no offered tool answers to, by name or alias: it holds nothing (a
    misspelling, or a tool the server no longer lists). A warning rather than an error, so a server
    dropping a tool does not stop the application; ``warnings.simplefilter("error",
    UnmatchedToolNameWarning)`` makes it one. Not a log line: logging is silent unless configured."""


class ToolCallConfirmationPolicy:
    """Decides whether one call needs a person's confirmation. Combine policies with ``|`` (OR)."""

    def __init__(
        self,
        predicate: Callable[[ToolCall, ToolCallback], bool],
        description: str,
        *,
        gated_names: tuple[tuple[str, frozenset[str]], ...] = (),
    ) -> None:
        """``gated_names``: ``(where they were configured, names)`` of the name gates inside, which
        :meth:`check_tool_names` compares with a request's tools."""
        self._predicate = predicate
        self._description = description
        self._gated_names = gated_names

    def requires_confirmation(self, call: ToolCall, callback: ToolCallback) -> bool:
        return self._predicate(call, callback)

    def __or__(self, other: ToolCallConfirmationPolicy) -> ToolCallConfirmationPolicy:
        return ToolCallConfirmationPolicy.any_of(self, other)

    def __repr__(self) -> str:
        return f"ToolCallConfirmationPolicy({self._description})"

    def check_tool_names(self, tools: Iterable[ToolCallback]) -> None:
        """Warn (:class:`UnmatchedToolNameWarning`) about each gated name that none of ``tools``
        answers to, by name or alias. The tool manager calls it when it first sees a request's tools."""
        if not self._gated_names:
            return
        known: set[str] = set()
        for tool in tools:
            known.add(tool.name)
            known.update(tool.metadata.aliases)
        for source, names in self._gated_names:
            unmatched = sorted(names - known)
            if unmatched:
                warnings.warn(
                    f"{source} gates tool name(s) {unmatched} that no tool of the request has, by name or alias: "
                    "calls are not gated by them. Check the spelling against the tools offered (an MCP tool "
                    "answers to its exposed name and to its name on the server)",
                    UnmatchedToolNameWarning,
                    stacklevel=3,
                )

    @classmethod
    def from_tool_metadata(cls) -> ToolCallConfirmationPolicy:
        """Calls to tools marked ``requires_confirmation`` (the default policy)."""
        return cls(lambda call, callback: callback.metadata.requires_confirmation, "from_tool_metadata")

    @classmethod
    def by_tool_names(cls, *names: str) -> ToolCallConfirmationPolicy:
        """Calls to the named tools, whatever their metadata says (how MCP tools get gated).

        A name matches a tool's exposed name or one of its ``metadata.aliases`` (an MCP tool's name
        on its server), so a gate holds whichever spelling is configured; a name that matches no tool
        of a request is reported with an :class:`UnmatchedToolNameWarning`."""
        selected = frozenset(names)
        listed = ", ".join(map(repr, sorted(selected)))
        return cls._by_names(selected, f"ToolCallConfirmationPolicy.by_tool_names({listed})")

    @classmethod
    def _by_names(cls, selected: frozenset[str], source: str) -> ToolCallConfirmationPolicy:
        """The gate of :meth:`by_tool_names`; ``source`` says where its names were configured."""

        def gated(call: ToolCall, callback: ToolCallback) -> bool:
            if call.name in selected:
                return True
            aliases = callback.metadata.aliases
            return bool(aliases) and not selected.isdisjoint(aliases)

        return cls(gated, f"by_tool_names{tuple(sorted(selected))}", gated_names=((source, selected),))

    @classmethod
    def from_predicate(cls, predicate: Callable[[ToolCall, ToolCallback], bool]) -> ToolCallConfirmationPolicy:
        """Calls for which ``predicate(call, tool)`` is true (e.g. a transfer above an amount)."""
        return cls(predicate, f"from_predicate({getattr(predicate, '__name__', 'fn')})")

    @classmethod
    def any_of(cls, *policies: ToolCallConfirmationPolicy) -> ToolCallConfirmationPolicy:
        parts = tuple(policies)
        return cls(
            lambda call, callback: any(p.requires_confirmation(call, callback) for p in parts),
            " | ".join(p._description for p in parts),
            gated_names=tuple(named for p in parts for named in p._gated_names),
        )

    @classmethod
    def never(cls) -> ToolCallConfirmationPolicy:
        return cls(lambda call, callback: False, "never")

    @classmethod
    def default(cls, settings: ConfirmationSettings | None = None) -> ToolCallConfirmationPolicy:
        """Tool metadata OR the extra tool names of the settings.

        With confirmation off, only the tools that say *who* may decide stay gated
        (``requires_confirmation="role"`` or a predicate): those are authorization rules, not a
        prompt to ask someone, and a switch meant for development must not open them. Policies an
        application builds itself (``from_predicate``, ``by_tool_names``) never read the settings.
        """
        settings = settings or ConfirmationSettings.from_env()
        if not settings.enabled:
            return cls(lambda call, callback: callback.metadata.approved_by is not None, "approval rules only")
        policy = cls.from_tool_metadata()
        return policy | cls._by_names(settings.tools, _TOOLS_SETTING) if settings.tools else policy


@dataclass(frozen=True)
class ConfirmationSettings:
    """Confirmation on or off, and extra tool names to gate. ``from_env()`` reads
    ``CHATCLIENT_TOOL_CONFIRMATION_ENABLED`` (default true) and ``CHATCLIENT_TOOL_CONFIRMATION_TOOLS``
    (comma-separated) once per process, and logs a warning when the first turns confirmation off;
    pass your own settings to override them in code. Off means: plain ``requires_confirmation=True``
    tools and the extra names run unasked; tools gated by a role or a predicate stay gated (see
    ``ToolCallConfirmationPolicy.default``)."""

    enabled: bool = True
    tools: frozenset[str] = frozenset()

    ENABLED_ENV: Final = "CHATCLIENT_TOOL_CONFIRMATION_ENABLED"
    TOOLS_ENV: Final = "CHATCLIENT_TOOL_CONFIRMATION_TOOLS"

    @staticmethod
    @cache
    def from_env() -> ConfirmationSettings:
        settings = ConfirmationSettings.parse(os.environ)
        if not settings.enabled:
            logging.getLogger("chatclient.tools").warning(
                "%s=%s turns tool call confirmation off: tools marked requires_confirmation=True and the names "
                "in %s run without asking anyone. Tools whose requires_confirmation names a role or a predicate "
                "stay gated, as do policies built in code",
                ConfirmationSettings.ENABLED_ENV,
                os.environ.get(ConfirmationSettings.ENABLED_ENV),
                ConfirmationSettings.TOOLS_ENV,
            )
        return settings

    @staticmethod
    def parse(env: Mapping[str, str]) -> ConfirmationSettings:
        enabled = env.get(ConfirmationSettings.ENABLED_ENV, "true").strip().lower() not in ("0", "false", "no", "off")
        names = env.get(ConfirmationSettings.TOOLS_ENV, "")
        return ConfirmationSettings(enabled, frozenset(n.strip() for n in names.split(",") if n.strip()))


# ---------------------------------------------------------------------------------------- decisions


class DecisionCompleteness(Enum):
    """What a call without a decision means when a paused reply is resumed."""

    ALL_REQUIRED = "all_required"
    """Every call of the reply needs a decision (Spring AI's rule); a missing one is an error."""
    MISSING_MEANS_DENY = "missing_means_deny"
    """A call without a decision is denied with the default message."""
    MISSING_UNGATED_MEANS_ALLOW = "missing_ungated_means_allow"
    """A call that needed no confirmation runs without a decision; gated calls still need one."""


@dataclass(frozen=True)
class ToolCallDecision:
    """A person's decision on one paused call, with who decided and why."""

    id: str
    allowed: bool
    message: str | None = None
    """For a denial: the tool result the model sees (default :data:`DEFAULT_DENY_MESSAGE`)."""
    arguments: str | None = None
    """For an allow: edited arguments (raw JSON) to run the call with instead of the model's."""
    approver: object | None = None
    """Who decided: a ``str``, an ``Approver``, or the application's own principal (see
    ``ToolCallAuthorizer``); its id is recorded with the tool result."""
    reason: str | None = None
    remember: Literal["conversation"] | None = None
    """``"conversation"``: also make this a standing rule of the conversation for the call's tool
    (any arguments), once the decision passed every check (see ``chatclient.tools.rules``)."""
    rule: str | None = None
    """The id of the rule that made this decision; ``None`` for a person's (or a handler's)."""

    @classmethod
    def allow(
        cls, id: str, *, arguments: str | Mapping[str, Any] | None = None, approver: object | None = None,
        reason: str | None = None, remember: Literal["conversation"] | None = None,
    ) -> ToolCallDecision:  # fmt: skip
        edited = json.dumps(arguments) if isinstance(arguments, Mapping) else arguments
        _check_remember(remember, edited)
        return cls(id, True, arguments=edited, approver=approver, reason=reason, remember=remember)

    @classmethod
    def deny(
        cls, id: str, message: str | None = None, *, approver: object | None = None, reason: str | None = None,
        remember: Literal["conversation"] | None = None,
    ) -> ToolCallDecision:  # fmt: skip
        _check_remember(remember, None)
        return cls(id, False, message=message, approver=approver, reason=reason, remember=remember)

    @property
    def deny_message(self) -> str:
        return self.message or DEFAULT_DENY_MESSAGE

    def record(self) -> dict[str, JsonValue]:
        """What is kept in the tool response's metadata: the decision, by whom, why."""
        record: dict[str, JsonValue] = {"decision": "allow" if self.allowed else "deny"}
        if self.arguments is not None:
            record["edited_arguments"] = self.arguments
        if self.approver is not None:
            record["approver"] = approver_id(self.approver)
        if self.reason is not None:
            record["reason"] = self.reason
        if self.rule is not None:
            record["rule"] = self.rule
        return record


def _check_remember(remember: str | None, edited: str | None) -> None:
    if remember not in (None, "conversation"):
        raise ToolCallDecisionError(f"remember= takes 'conversation' (or None), not {remember!r}")
    if remember is not None and edited is not None:
        raise ToolCallDecisionError(
            "An edited call cannot be remembered: a rule allows the tool's calls as the model makes them"
        )


@dataclass(frozen=True)
class ToolCallDecisions:
    """The decisions for one paused reply. Build with ``ToolCallDecisions.of(...)``."""

    decisions: tuple[ToolCallDecision, ...] = ()
    by_id: Mapping[str, ToolCallDecision] = field(default_factory=dict)

    @classmethod
    def of(
        cls, *decisions: ToolCallDecision | Iterable[ToolCallDecision], approver: object | None = None
    ) -> ToolCallDecisions:
        """The decisions; ``approver`` (the authenticated person) is given to each that names none."""
        flat: list[ToolCallDecision] = []
        for item in decisions:
            flat.extend([item] if isinstance(item, ToolCallDecision) else item)
        if approver is not None:
            flat = [d if d.approver is not None else replace(d, approver=approver) for d in flat]
        duplicated = sorted(call_id for call_id, n in Counter(d.id for d in flat).items() if n > 1)
        if duplicated:
            raise ToolCallDecisionError(f"More than one decision for tool call(s) {duplicated}; nothing ran")
        return cls(tuple(flat), {d.id: d for d in flat})

    def get(self, call_id: str) -> ToolCallDecision | None:
        return self.by_id.get(call_id)


# ---------------------------------------------------------------------------------------- pending state


class PendingCall(BaseModel):
    """One call of a paused reply, as the application shows it to a person."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    id: str
    """The call's own id in its reply (what a decision names); never shared by two calls."""
    name: str
    arguments: str
    requires_confirmation: bool
    tool_identity: str = ""
    """The tool's ``ToolCallback.identity`` when the call paused (in the digest); a resume runs
    nothing if the tool of that name now has another identity."""
    wire_id: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The provider's id when it was replaced (repeated, empty or missing: ``ToolCall.wire_id``;
    in the digest)."""


class PendingToolCalls(BaseModel):
    """A paused reply: its calls, the conversation up to and including it, and a binding digest.

    It also carries where its turn began (``turn_id``, ``turn_start``: the index of the turn's first
    message in ``conversation``), the round it paused in and the usage so far, so a resumed turn is
    the same turn; and a random ``nonce`` that a resume redeems once (see ``NonceLedger``).

    JSON-serialisable (``model_dump_json``), so the application can store it. ``digest`` is an
    unkeyed SHA-256 over everything a resume reads (the calls, the whole conversation, the turn,
    the nonce, the creation time and the expiry; not ``metadata``): it refuses a state corrupted by
    accident or edited by a careless writer, but anyone who can write the state can also recompute
    it. Against such a writer the check must be keyed: give the ``PendingToolCallStore`` a
    ``secret=`` (an HMAC-SHA256 over the stored state, its id and its deadline), or ``seal`` the
    state with one when it travels through an untrusted client. A store also hands a state out
    once across processes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    reply_id: str
    calls: tuple[PendingCall, ...]
    conversation: tuple[Message, ...]
    digest: str
    created_at: float = Field(default_factory=time.time)
    expires_at: float | None = None
    turn_id: str = ""
    turn_start: int = 0
    round: int = 1
    usage: Usage | None = None
    nonce: str = ""
    conversation_id: str = ""
    """The conversation the turn paused in (set by the memory advisor; in the digest): a resume
    under another conversation id is refused, one that names none is resumed in this one. Empty
    in states paused without memory, or sealed before it existed."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Added by observers at the pause (e.g. the W3C ``traceparent`` a resume links to). Not in
    the digest: nothing that runs depends on it, so observers may add to a state already bound."""

    @property
    def awaiting_ids(self) -> list[str]:
        """Ids of the calls that need a person's decision."""
        return [c.id for c in self.calls if c.requires_confirmation]

    @property
    def reply(self) -> AssistantMessage:
        message = self.conversation[-1] if self.conversation else None
        if not isinstance(message, AssistantMessage):
            raise PendingStateTamperedError("The pending conversation does not end with the paused reply")
        return message

    @classmethod
    def create(
        cls,
        conversation: Sequence[Message],
        calls: Sequence[PendingCall],
        *,
        reply_id: str,
        expires_in: float | None = DEFAULT_PENDING_EXPIRES_IN,
        turn_id: str = "",
        turn_start: int = 0,
        round: int = 1,
        usage: Usage | None = None,
    ) -> PendingToolCalls:
        now = time.time()
        import secrets

        state = cls(
            reply_id=reply_id,
            calls=tuple(calls),
            conversation=tuple(conversation),
            digest="",
            created_at=now,
            expires_at=now + expires_in if expires_in is not None else None,
            turn_id=turn_id,
            turn_start=turn_start,
            round=round,
            usage=usage,
            nonce=secrets.token_urlsafe(18),
        )
        return state.model_copy(update={"digest": _digest(state)})

    def for_turn(self, turn_id: str, turn_start: int, round: int, usage: Usage | None) -> PendingToolCalls:
        """This state, placed in its turn (the tool loop knows the turn; the manager does not)."""
        expires_in = self.expires_at - self.created_at if self.expires_at is not None else None
        return PendingToolCalls.create(
            self.conversation,
            self.calls,
            reply_id=self.reply_id,
            expires_in=expires_in,
            turn_id=turn_id,
            turn_start=turn_start,
            round=round,
            usage=usage,
        )

    def in_conversation(self, conversation_id: str) -> PendingToolCalls:
        """This state bound to ``conversation_id`` (same nonce, digest recomputed over it)."""
        if self.conversation_id == conversation_id:
            return self
        if self.conversation_id:
            raise PendingConversationMismatchError(self.conversation_id, conversation_id)
        bound = self.model_copy(update={"conversation_id": conversation_id})
        return bound.model_copy(update={"digest": _digest(bound)})

    def verify(self, *, now: float | None = None) -> None:
        """Raise unless the state is intact (calls match the reply and the digest) and not expired."""
        reply_calls = [(c.id, c.wire_id, c.name, canonical_arguments(c.arguments)) for c in self.reply.tool_calls]
        listed = [(c.id, c.wire_id, c.name, canonical_arguments(c.arguments)) for c in self.calls]
        if reply_calls != listed or not hmac.compare_digest(_digest(self), self.digest):
            raise PendingStateTamperedError("The pending tool calls were altered; nothing ran")
        if not 0 <= self.turn_start < len(self.conversation):
            raise PendingStateTamperedError("The pending state's turn does not lie in its conversation; nothing ran")
        if self.expires_at is not None and (now if now is not None else time.time()) > self.expires_at:
            raise PendingStateExpiredError("The pending tool calls expired; nothing ran")

    def history_before_reply(self) -> tuple[Message, ...]:
        return self.conversation[:-1]

    @property
    def turn_request(self) -> tuple[Message, ...]:
        """The messages of the request that began the turn: those before it and its user message.

        A resume sends these through the chain, so advisors outside the tool loop see the same
        prompt as when the turn began; the loop restores the rest of the turn from this state.
        """
        start = self.turn_start
        first = self.conversation[start] if start < len(self.conversation) else None
        return self.conversation[: start + 1] if isinstance(first, UserMessage) else self.conversation[:start]

    def paused_response(self) -> ChatResponse:
        return ChatResponse.of(self.reply, id=self.reply_id)

    def __repr__(self) -> str:
        return _pending_repr(self)

    def _repr_markdown_(self) -> str:
        """A notebook shows a table of the calls: id, tool, arguments, needs confirmation."""
        return _pending_markdown(self)

    def _repr_html_(self) -> str:
        """The same table in HTML; ids, names and arguments are escaped."""
        return _pending_html(self)


def _digest(state: PendingToolCalls) -> str:
    """SHA-256 of :func:`_canonical_document`: unkeyed, so it catches accidental corruption and
    careless writers, not a writer who recomputes it (a store's ``secret=`` or ``seal`` does)."""
    return hashlib.sha256(_canonical_document(state)).hexdigest()


def _canonical_document(state: PendingToolCalls) -> bytes:
    """Everything a resume reads, as one canonical JSON document (add a field here to bind it).

    Only ``digest`` itself and ``metadata`` (observers' notes, nothing runs from them) are left out.
    """
    document = {
        "reply_id": state.reply_id,
        "calls": [
            [c.id, c.wire_id, c.name, canonical_arguments(c.arguments), c.requires_confirmation, c.tool_identity]
            for c in state.calls
        ],
        "conversation": [message.model_dump(mode="json") for message in state.conversation],
        "turn": [state.turn_id, state.turn_start, state.round, state.nonce, state.conversation_id],
        "created_at": state.created_at,
        "expires_at": state.expires_at,
        "usage": state.usage.model_dump(mode="json") if state.usage is not None else None,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class ToolCallConfirmationRequired(ChatClientError):
    """Raised by ``execute_tool_calls`` when a reply holds calls that need confirmation.

    Nothing of the reply has run. ``awaiting_ids`` lists the gated calls; ``pending`` is the state to
    resume from (the conversation before the reply, the reply, every call with its flag).
    """

    def __init__(self, pending: PendingToolCalls, chat_response: ChatResponse) -> None:
        self.pending = pending
        self.chat_response = chat_response
        self.awaiting_ids = pending.awaiting_ids
        super().__init__(f"Tool calls awaiting confirmation: {self.awaiting_ids}")


def awaiting_decision(response: Any) -> PendingToolCalls | None:
    """The pending state when ``response`` paused for confirmation, else ``None``.

    Accepts a ``ChatClientResponse`` (the state rides in its context) or a ``ChatResponse`` (the
    state rides in its metadata, so a streamed or stored reply works too).
    """
    context = getattr(response, "context", None)
    if isinstance(context, Mapping):  # a ChatClientResponse (the envelope sits above this module)
        pending = context.get(ContextKeys.PENDING_TOOL_CALLS)
        if isinstance(pending, PendingToolCalls):
            return pending
        response = getattr(response, "chat_response", None)
    if isinstance(response, ChatResponse):
        raw = response.metadata.extra.get(PENDING_METADATA_KEY)
        if raw is not None:
            return PendingToolCalls.model_validate(raw)
    return None


# ---------------------------------------------------------------------------- rendering


def _pending_repr(pending: PendingToolCalls) -> str:
    names = ", ".join(f"{c.name}({c.id})" for c in pending.calls)
    return f"PendingToolCalls(reply_id={pending.reply_id!r}, calls=[{names}], awaiting={pending.awaiting_ids})"


def _paused_header(pending: PendingToolCalls) -> str:
    return f"{len(pending.awaiting_ids)} call(s) await a decision"


def _pending_markdown(pending: PendingToolCalls) -> str:
    rows = [
        f"| {cell(c.id)} | {cell(md_code(c.name))} | {cell(md_code(c.arguments))} | "
        f"{'yes' if c.requires_confirmation else 'no'} |"
        for c in pending.calls
    ]
    header = f"**Paused**: {_paused_header(pending)}\n\n"
    table = "| id | tool | arguments | needs confirmation |\n|---|---|---|---|\n"
    return header + table + "\n".join(rows)


def _pending_html(pending: PendingToolCalls) -> str:
    rows = "".join(
        f"<tr><td>{escape(c.id)}</td><td>{html_code(c.name)}</td><td>{html_code(c.arguments)}</td>"
        f"<td>{'yes' if c.requires_confirmation else 'no'}</td></tr>"
        for c in pending.calls
    )
    head = "<tr><th>id</th><th>tool</th><th>arguments</th><th>needs confirmation</th></tr>"
    return (
        f'<div class="chatclient-paused"><p><strong>Paused</strong>: {_paused_header(pending)}</p>'
        f"<table><thead>{head}</thead><tbody>{rows}</tbody></table></div>"
    )
