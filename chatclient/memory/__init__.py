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

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
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
    from .journal import UnfinishedTurnError, UnfinishedTurns
    from .log import (
        CONVERSATION_ID,
        AppendResult,
        IdempotencyMismatch,
        NewEvent,
        SessionEvent,
        VersionConflict,
        turn_events,
    )
    from .postgres import AsyncPostgresSessionRepository, PostgresSessionRepository
    from .redis import AsyncRedisSessionRepository, RedisSessionRepository
    from .repository import (
        AsyncInMemorySessionRepository,
        AsyncSessionRepository,
        InMemorySessionRepository,
        SessionRepository,
    )
    from .rules import AsyncConversationRules, ConversationRules
    from .sqlite import AsyncSqliteSessionRepository, SqliteSessionRepository
    from .usage import asession_usage, session_usage

__all__ = [
    "CONVERSATION_ID",
    "ConcurrencyPolicy",
    "SessionMemoryAdvisor",
    "AppendResult",
    "AsyncInMemorySessionRepository",
    "AsyncPostgresSessionRepository",
    "AsyncRedisSessionRepository",
    "AsyncConversationRules",
    "AsyncSessionRepository",
    "AsyncSqliteSessionRepository",
    "ConversationRules",
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
    "UnfinishedTurnError",
    "UnfinishedTurns",
]

# Loaded on first use (PEP 562): importing one module of the package (the log's names, a store)
# loads neither the advisor nor the other stores; the drivers load only with a store that needs them.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".advisor": ["ConcurrencyPolicy", "SessionMemoryAdvisor"],
        ".chat_memory": ["ChatMemory", "MessageChatMemoryAdvisor", "MessageWindowChatMemory"],
        ".compaction": [
            "Compaction",
            "RecursiveSummary",
            "SlidingWindow",
            "TokenBudget",
            "TokenCount",
            "TurnCount",
            "TurnWindow",
            "any_of",
        ],
        ".errors": ["ConcurrentTurnError", "SessionStoreError", "SessionWriteError"],
        ".journal": ["UnfinishedTurnError", "UnfinishedTurns"],
        ".log": [
            "CONVERSATION_ID",
            "AppendResult",
            "IdempotencyMismatch",
            "NewEvent",
            "SessionEvent",
            "VersionConflict",
            "turn_events",
        ],
        ".repository": [
            "AsyncInMemorySessionRepository",
            "AsyncSessionRepository",
            "InMemorySessionRepository",
            "SessionRepository",
        ],
        ".usage": ["asession_usage", "session_usage"],
        ".rules": ["AsyncConversationRules", "ConversationRules"],
        ".postgres": ["AsyncPostgresSessionRepository", "PostgresSessionRepository"],
        ".redis": ["AsyncRedisSessionRepository", "RedisSessionRepository"],
        ".sqlite": ["AsyncSqliteSessionRepository", "SqliteSessionRepository"],
    },
)
