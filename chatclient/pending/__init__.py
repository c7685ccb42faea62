"""Keeping paused tool calls safe between the pause and the resume, on every backend.

- :mod:`.state`: the store and nonce-ledger protocols, the in-memory store and ledger, the SQLite
  store, ``seal``/``unseal`` for a state that travels through an untrusted client, and ``redeem``.
- :mod:`.sqlite`, :mod:`.redis`, :mod:`.postgres`: the stores and nonce ledgers that several
  processes share (the drivers load only when one is made); :mod:`.outage`: a driver's failure as
  one ``PendingStoreError``.

The stores sit on :mod:`chatclient._storage`, beside memory, and import nothing of memory. Names load on
first use (PEP 562), so importing one store loads neither the others nor their drivers.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .postgres import (
        AsyncPostgresNonceLedger,
        AsyncPostgresPendingToolCallStore,
        PostgresNonceLedger,
        PostgresPendingToolCallStore,
    )
    from .redis import (
        AsyncRedisNonceLedger,
        AsyncRedisPendingToolCallStore,
        RedisNonceLedger,
        RedisPendingToolCallStore,
    )
    from .sqlite import AsyncSqliteNonceLedger, AsyncSqlitePendingToolCallStore, SqliteNonceLedger
    from .state import (
        AsyncInMemoryNonceLedger,
        AsyncInMemoryPendingToolCallStore,
        AsyncNonceLedger,
        AsyncPendingToolCallStore,
        InMemoryNonceLedger,
        InMemoryPendingToolCallStore,
        NonceLedger,
        PendingToolCallStore,
        SqlitePendingToolCallStore,
        StoredPendingToolCalls,
        aredeem,
        check_state_id,
        default_nonce_ledger,
        redeem,
        seal,
        unseal,
    )

__all__ = [
    "aredeem",
    "AsyncInMemoryNonceLedger",
    "AsyncInMemoryPendingToolCallStore",
    "AsyncNonceLedger",
    "AsyncPendingToolCallStore",
    "AsyncPostgresNonceLedger",
    "AsyncPostgresPendingToolCallStore",
    "AsyncRedisNonceLedger",
    "AsyncRedisPendingToolCallStore",
    "AsyncSqliteNonceLedger",
    "AsyncSqlitePendingToolCallStore",
    "check_state_id",
    "default_nonce_ledger",
    "InMemoryNonceLedger",
    "InMemoryPendingToolCallStore",
    "NonceLedger",
    "PendingToolCallStore",
    "PostgresNonceLedger",
    "PostgresPendingToolCallStore",
    "redeem",
    "RedisNonceLedger",
    "RedisPendingToolCallStore",
    "seal",
    "SqliteNonceLedger",
    "SqlitePendingToolCallStore",
    "StoredPendingToolCalls",
    "unseal",
]

__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".state": [
            "aredeem",
            "AsyncInMemoryNonceLedger",
            "AsyncInMemoryPendingToolCallStore",
            "AsyncNonceLedger",
            "AsyncPendingToolCallStore",
            "check_state_id",
            "default_nonce_ledger",
            "InMemoryNonceLedger",
            "InMemoryPendingToolCallStore",
            "NonceLedger",
            "PendingToolCallStore",
            "redeem",
            "seal",
            "SqlitePendingToolCallStore",
            "StoredPendingToolCalls",
            "unseal",
        ],
        ".sqlite": ["AsyncSqliteNonceLedger", "AsyncSqlitePendingToolCallStore", "SqliteNonceLedger"],
        ".postgres": [
            "AsyncPostgresNonceLedger",
            "AsyncPostgresPendingToolCallStore",
            "PostgresNonceLedger",
            "PostgresPendingToolCallStore",
        ],
        ".redis": [
            "AsyncRedisNonceLedger",
            "AsyncRedisPendingToolCallStore",
            "RedisNonceLedger",
            "RedisPendingToolCallStore",
        ],
    },
)
