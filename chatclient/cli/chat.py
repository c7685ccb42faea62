"""The chat loop: read a line, stream the reply (the spine's ``.events()``), show each tool call as
it happens, ask ``allow / deny`` for a gated call and resume the same turn; the conversation is kept
by a ``SessionMemoryAdvisor`` (in memory, or in a SQLite file)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .errors import UsageError
from .loading import load_object

if TYPE_CHECKING:
    from chatclient import ChatClient
    from chatclient.client import ChatClientRequestSpec
    from chatclient.errors import ToolCallUnauthorizedError
    from chatclient.events import StreamEvent
    from chatclient.tools import Approver
    from chatclient.tools.confirmation import PendingCall, PendingToolCalls, ToolCallDecisions

PROMPT = "you> "
DEFAULT_APPROVER = "terminal"
THINKING = "[thinking] "
_DIM, _PLAIN = "\x1b[2m", "\x1b[0m"
ALLOW = {"a", "allow", "y", "yes"}
DENY = {"d", "deny", "n", "no"}
_RESULT_LIMIT = 200


def build_client(
    model: str,
    *,
    system: str | None = None,
    base_url: str | None = None,
    tools: Sequence[str] = (),
    memory_file: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ChatClient:
    """The client of a chat session; every mistake in the arguments is a :class:`UsageError`.

    ``options`` are the model's options as keywords (``-o temperature=0.2``), checked against the
    model's own options class."""
    from chatclient import ChatClient, ConfigurationError
    from chatclient._layout import own_package
    from chatclient.memory import SessionMemoryAdvisor

    with own_package("providers"):
        from providers import create

    try:
        chat_model = create(model, **({"base_url": base_url} if base_url else {}))
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from exc
    except TypeError as exc:
        if not base_url:
            raise
        raise UsageError(f"{model}: this provider does not take --base-url ({exc})") from exc
    builder = ChatClient.builder(chat_model).default_advisors(SessionMemoryAdvisor(_repository(memory_file)))
    if system:
        builder.default_system(system)
    if options:
        try:
            builder.default_options(**options)
        except (TypeError, ValueError) as exc:  # an unknown key; a value of the wrong type (pydantic's error)
            raise UsageError(f"-o/--option: {_one_line_error(exc)}") from exc
    for reference in tools:
        try:
            builder.default_tools(load_object(reference))
        except ConfigurationError as exc:
            raise UsageError(f"--tools {reference!r}: {exc}") from exc
    return builder.build()


def _one_line_error(exc: Exception) -> str:
    """A pydantic error's several lines as one: ``temperature: Input should be a valid number (got 'hot')``."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(
        f"{'.'.join(map(str, error['loc']))}: {error['msg']} (got {error.get('input')!r})" for error in errors()
    )


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``["temperature=0.2", "tool_choice=required"]`` as keywords: a value is JSON where it parses
    (``0.2``, ``true``, ``["END"]``), else the text as written (``required``)."""
    import json

    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"-o/--option {pair!r}: expected KEY=VALUE, e.g. -o temperature=0.2")
        try:
            options[key] = json.loads(text)
        except ValueError:
            options[key] = text
    return options


def _repository(memory_file: str | None) -> Any:
    from chatclient.memory import InMemorySessionRepository

    if memory_file is None:
        return InMemorySessionRepository()
    import sqlite3

    from chatclient.memory import SqliteSessionRepository

    try:
        return SqliteSessionRepository(memory_file)
    except (sqlite3.Error, OSError) as exc:
        raise UsageError(f"--memory-file {memory_file!r}: {exc}") from exc


def _close(events: object) -> None:
    close = getattr(events, "close", None)
    if callable(close):
        close()


def _one_line(text: str, limit: int = _RESULT_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ChatSession:
    """One conversation at the terminal, until ``/exit`` or end of input."""

    def __init__(
        self,
        client: ChatClient,
        *,
        conversation: str,
        label: str,
        out: TextIO | None = None,
        reasoning: bool = True,
        approver: Approver | None = None,
    ) -> None:
        from chatclient.tools import Approver

        self.client = client
        self.conversation = conversation
        self.label = label
        self.out = out or sys.stdout
        self.reasoning = reasoning
        """Show the model's reasoning (``ReasoningDelta``) as it streams, after ``[thinking]``."""
        self.approver = approver or Approver(DEFAULT_APPROVER)
        """Who decides at this terminal: the id recorded with each decision, the roles it holds
        (a tool with ``requires_confirmation="role"`` needs that role)."""
        self._mid_line = False
        self._thinking = False
        self._dim = self.out.isatty()

    def run(self) -> int:
        self._write(f"chatclient chat with {self.label}. Type /exit or press Ctrl-D to quit.\n")
        while True:
            try:
                line = input(PROMPT)
            except (EOFError, KeyboardInterrupt):
                self._write("\n")
                return 0
            text = line.strip()
            if text in ("/exit", "/quit"):
                return 0
            if text:
                self.turn(self.client.prompt(text).conversation(self.conversation))

    def turn(self, spec: ChatClientRequestSpec) -> None:
        """One turn: a gated call is asked about at the terminal as the turn runs (the approval
        handler), then the turn goes on; an error ends the turn, not the chat (memory stores only
        finished turns, so nothing half-done is kept)."""
        from chatclient import ChatClientError, ToolCallUnauthorizedError

        try:
            self._stream(spec.approval_handler(self._decide))
        except KeyboardInterrupt:
            # the stream is closed by now (its connection too); memory keeps only finished turns
            self._line("[interrupted]")
        except ToolCallUnauthorizedError as exc:
            self._refused(exc)
        except ChatClientError as exc:
            self._line(f"[error] {type(exc).__name__}: {exc}")

    def _stream(self, spec: ChatClientRequestSpec) -> PendingToolCalls | None:
        from chatclient.events import ReasoningDelta

        pending: PendingToolCalls | None = None
        events = spec.stream().events()
        try:
            for event in events:
                if isinstance(event, ReasoningDelta):
                    self._think(event.text)
                    continue
                self._stop_thinking()
                pending = self._show(event, pending)
        finally:
            _close(events)  # an interrupted reply: its stream and connection are closed now
            self._stop_thinking()
        self._end_line()
        return pending

    def _show(self, event: StreamEvent, pending: PendingToolCalls | None) -> PendingToolCalls | None:
        from chatclient.events import TextDelta, ToolCallReady, ToolResultReady, TurnPaused

        if isinstance(event, TextDelta):
            self._write(event.text)
            self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolCallReady):
            self._line(f"[tool] {event.name} {event.arguments}")
        elif isinstance(event, ToolResultReady):
            label = "[tool error]" if event.is_error else "[result]"
            self._line(f"{label} {event.name}: {_one_line(event.result)}")
        elif isinstance(event, TurnPaused):
            pending = event.pending
        return pending

    def _think(self, text: str) -> None:
        """A piece of reasoning: after ``[thinking]`` at the start of a run, dimmed on a terminal."""
        if not self.reasoning or not text:
            return
        if not self._thinking:
            self._end_line()
            self._write(THINKING + (_DIM if self._dim else ""))
            self._thinking = True
        self._write(text)
        self._mid_line = not text.endswith("\n")

    def _stop_thinking(self) -> None:
        if self._thinking:
            self._thinking = False
            if self._dim:
                self._write(_PLAIN)
            self._end_line()

    def _decide(self, pending: PendingToolCalls) -> ToolCallDecisions:
        """The approval handler: ask for each gated call; the calls of the reply that need no
        confirmation are allowed."""
        from chatclient import ToolCallDecision, ToolCallDecisions

        self._stop_thinking()
        self._end_line()
        decisions = []
        for call in pending.calls:
            if not call.requires_confirmation or self._ask(call):
                decisions.append(ToolCallDecision.allow(call.id))
            else:
                decisions.append(ToolCallDecision.deny(call.id, reason="denied at the terminal"))
        return ToolCallDecisions.of(*decisions, approver=self.approver)

    def _refused(self, error: ToolCallUnauthorizedError) -> None:
        """The approver may not decide: say who needs what; nothing of the reply ran, the chat goes on."""
        roles = ", ".join(sorted(self.approver.roles)) or "no role"
        for _call_id, tool, why in error.refused:
            self._line(f"[refused] {tool}: {why}; you decide as {self.approver.id} ({roles})")
        self._line("Nothing ran. Start the chat with --approver NAME --approver-role ROLE to decide such calls.")

    def _ask(self, call: PendingCall) -> bool:
        question = f"[confirm] {call.name} {call.arguments} allow or deny? [a/d] "
        while True:
            try:
                answer = input(question).strip().lower()
            except (EOFError, KeyboardInterrupt):
                self._line("deny")
                return False  # no answer is no permission
            if answer in ALLOW:
                return True
            if answer in DENY:
                return False
            self._line("Please answer a (allow) or d (deny).")

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _end_line(self) -> None:
        if self._mid_line:
            self._write("\n")
            self._mid_line = False

    def _line(self, text: str) -> None:
        self._end_line()
        self._write(text + "\n")
