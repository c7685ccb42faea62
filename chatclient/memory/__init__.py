"""Conversations that last: one append-only log of events per conversation.

- :class:`SessionMemoryAdvisor` loads the conversation before a turn and appends the whole turn
  (user message, tool calls, tool results, answer) in one atomic, idempotent batch after it.
- Backends, each with a sync and an async face: in memory, SQLite (the embedded default),
  Redis (``chatclient[redis]``) and PostgreSQL (``chatclient[postgres]``); the drivers are
  imported only when a store that needs them is made.
- :class:`MessageWindowChatMemory` / :class:`MessageChatMemoryAdvisor` for Spring AI familiarity:
  the window is applied when reading, so nothing stored is ever deleted by it.
- :class:`Compaction` (a trigger and a strategy, on ``SessionMemoryAdvisor(compaction=...)``):
  a boundary event appended to the log; the view after it is the summary and the later turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .advisor import ConcurrencyPolicy, SessionMemoryAdvisor
from .chat_memory import ChatMemory, MessageChatMemoryAdvisor, MessageWindowChatMemory
from .compaction import (
    Compaction,
    RecursiveSummary,
    SlidingWindow,
    TokenBudget,
    TokenCount,
    TurnCount,
    TurnWindow,
    any_of,
)
from .errors import ConcurrentTurnError, SessionStoreError, SessionWriteError
from .log import (
    CONVERSATION_ID,
    AppendResult,
    IdempotencyMismatch,
    NewEvent,
    SessionEvent,
    VersionConflict,
    turn_events,
)
from .repository import (
    AsyncInMemorySessionRepository,
    AsyncSessionRepository,
    InMemorySessionRepository,
    SessionRepository,
)
from .usage import asession_usage, session_usage

if TYPE_CHECKING:
    from .postgres import AsyncPostgresSessionRepository, PostgresSessionRepository
    from .redis import AsyncRedisSessionRepository, RedisSessionRepository
    from .sqlite import AsyncSqliteSessionRepository, SqliteSessionRepository

__all__ = [
    "CONVERSATION_ID",
    "ConcurrencyPolicy",
    "SessionMemoryAdvisor",
    "AppendResult",
    "AsyncInMemorySessionRepository",
    "AsyncPostgresSessionRepository",
    "AsyncRedisSessionRepository",
    "AsyncSessionRepository",
    "AsyncSqliteSessionRepository",
    "ChatMemory",
    "Compaction",
    "RecursiveSummary",
    "SlidingWindow",
    "TokenBudget",
    "TokenCount",
    "TurnCount",
    "TurnWindow",
    "any_of",
    "IdempotencyMismatch",
    "InMemorySessionRepository",
    "MessageChatMemoryAdvisor",
    "MessageWindowChatMemory",
    "NewEvent",
    "PostgresSessionRepository",
    "RedisSessionRepository",
    "SessionEvent",
    "SessionRepository",
    "SqliteSessionRepository",
    "VersionConflict",
    "turn_events",
    "session_usage",
    "asession_usage",
    "ConcurrentTurnError",
    "SessionStoreError",
    "SessionWriteError",
]

_LAZY = {
    "SqliteSessionRepository": "sqlite",
    "AsyncSqliteSessionRepository": "sqlite",
    "RedisSessionRepository": "redis",
    "AsyncRedisSessionRepository": "redis",
    "PostgresSessionRepository": "postgres",
    "AsyncPostgresSessionRepository": "postgres",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
