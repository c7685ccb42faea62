"""A PostgreSQL store built while the server is unreachable fails with the memory layer's store
error (the session repository) or the pending store's (the pending store, the nonce ledger), naming
the backend, the address without the password and ``connect_timeout``: never a raw ``PoolTimeout``.

The address is a port on 127.0.0.1 that nothing listens on; no server is needed."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("psycopg_pool")

from chatclient.errors import PendingStoreError
from chatclient.memory import SessionStoreError

SECRET = "s3cret-pw"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sync_stores() -> list[tuple[str, Callable[[str], Any], type[Exception]]]:
    from chatclient.memory.postgres import PostgresSessionRepository
    from chatclient.pending.postgres import PostgresNonceLedger, PostgresPendingToolCallStore

    return [
        ("PostgresSessionRepository", lambda url: PostgresSessionRepository(url, connect_timeout=1), SessionStoreError),
        ("PostgresPendingToolCallStore", lambda url: PostgresPendingToolCallStore(url, connect_timeout=1),
         PendingStoreError),
        ("PostgresNonceLedger", lambda url: PostgresNonceLedger(url, connect_timeout=1), PendingStoreError),
    ]  # fmt: skip


def async_stores() -> list[tuple[str, Callable[[str], Any], type[Exception]]]:
    from chatclient.memory.postgres import AsyncPostgresSessionRepository
    from chatclient.pending.postgres import AsyncPostgresNonceLedger, AsyncPostgresPendingToolCallStore

    return [
        ("AsyncPostgresSessionRepository", lambda url: AsyncPostgresSessionRepository(url, connect_timeout=1),
         SessionStoreError),
        ("AsyncPostgresPendingToolCallStore", lambda url: AsyncPostgresPendingToolCallStore(url, connect_timeout=1),
         PendingStoreError),
        ("AsyncPostgresNonceLedger", lambda url: AsyncPostgresNonceLedger(url, connect_timeout=1), PendingStoreError),
    ]  # fmt: skip


def assert_says_what_and_where(error: BaseException, name: str, port: int) -> None:
    message = str(error)
    assert name in message and "PostgreSQL" in message
    assert f"app@127.0.0.1:{port}/chat" in message, "the address, without the password"
    assert SECRET not in message
    assert "connect_timeout=1 s" in message
    assert type(error.__cause__).__module__.split(".")[0] in ("psycopg", "psycopg_pool")


@pytest.mark.parametrize("index", range(3))
def test_a_store_built_while_the_server_is_down_names_backend_address_and_timeout(index: int) -> None:
    name, build, error = sync_stores()[index]
    port = closed_port()
    with pytest.raises(error) as raised:
        build(f"postgresql://app:{SECRET}@127.0.0.1:{port}/chat")
    assert_says_what_and_where(raised.value, name, port)
    if isinstance(raised.value, SessionStoreError):
        assert raised.value.backend == name
    else:
        assert isinstance(raised.value, PendingStoreError) and raised.value.store == name


@pytest.mark.parametrize("index", range(3))
def test_an_async_store_opened_while_the_server_is_down_says_the_same(index: int) -> None:
    name, build, error = async_stores()[index]
    port = closed_port()

    async def scenario() -> None:
        store = build(f"postgresql://app:{SECRET}@127.0.0.1:{port}/chat")
        with pytest.raises(error) as raised:
            await store.open()
        assert_says_what_and_where(raised.value, name, port)
        await store.close()  # nothing left open: closing after a failed open is harmless

    asyncio.run(scenario())
