"""``ChatMemory`` for Spring AI familiarity, on the same append-only log.

``MessageWindowChatMemory`` keeps every message it is given and applies its window when reading:
the last ``max_messages`` events, cut forward to where a turn begins, so a window never starts with
a tool result nor ends with an unanswered tool call, and nothing stored is deleted by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..advisor import AdvisorOrder, ChatClientRequest
from ..errors import ConfigurationError
from ..messages import Message
from .advisor import ConcurrencyPolicy, SessionMemoryAdvisor
from .journal import UnfinishedTurns
from .log import check_session_id, turn_events
from .repository import InMemorySessionRepository, SessionRepository
from .window import messages_of, read_size, window

__all__ = ["ChatMemory", "MessageChatMemoryAdvisor", "MessageWindowChatMemory"]


@runtime_checkable
class ChatMemory(Protocol):
    def add(self, conversation_id: str, messages: Sequence[Message], *, turn_id: str) -> None: ...

    def get(self, conversation_id: str) -> list[Message]: ...

    def clear(self, conversation_id: str) -> None: ...


class MessageWindowChatMemory:
    """The last ``max_messages`` messages of each conversation (default 20), windowed at read time."""

    def __init__(self, repository: SessionRepository | None = None, *, max_messages: int = 20) -> None:
        if max_messages <= 0:
            raise ConfigurationError(f"max_messages must be positive, got {max_messages}")
        self.repository = repository if repository is not None else InMemorySessionRepository()
        self.max_messages = max_messages

    def add(self, conversation_id: str, messages: Sequence[Message], *, turn_id: str) -> None:
        """Append ``messages`` as one turn (idempotent: the same turn id adds nothing twice)."""
        self.repository.append(check_session_id(conversation_id), turn_events(turn_id, messages))

    def get(self, conversation_id: str) -> list[Message]:
        events = self.repository.events(conversation_id, last=read_size(self.max_messages))
        return messages_of(window(events, self.max_messages))

    def clear(self, conversation_id: str) -> None:
        self.repository.delete(conversation_id)


class MessageChatMemoryAdvisor(SessionMemoryAdvisor):
    """Spring's name for the memory advisor: the memory's repository, its window."""

    def __init__(
        self,
        memory: MessageWindowChatMemory,
        *,
        concurrency: ConcurrencyPolicy = "append",
        order: int = AdvisorOrder.MEMORY,
        unfinished_turns: UnfinishedTurns = "raise",
    ) -> None:
        super().__init__(
            memory.repository,
            window=memory.max_messages,
            concurrency=concurrency,
            order=order,
            unfinished_turns=unfinished_turns,
        )
        self.memory = memory

    def conversation_of(self, request: ChatClientRequest) -> str:  # type: ignore[override]
        """The base check, its error naming the advisor the application actually used."""
        try:
            return SessionMemoryAdvisor.conversation_of(request)
        except ConfigurationError as exc:
            raise ConfigurationError(str(exc).replace("SessionMemoryAdvisor", type(self).__name__, 1)) from None
