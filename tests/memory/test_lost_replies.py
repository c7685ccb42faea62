"""A take or a redeem whose reply is lost — the server ran it, then the connection dropped before
the answer arrived — is retried and recognised as the same taker: the resume goes on, the tool runs
once, and the state is still single-use. With a plain ``GETDEL`` the retry was told the state was
gone and the paused turn was lost. Real Redis, behind a proxy that drops one reply."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatclient.errors import PendingStateNotFoundError
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

from .cuttable_proxy import cuttable
from .test_pending_outage import ALLOW, client_and_tools, paused_state


def test_a_take_whose_reply_is_lost_still_resumes_once(prefix: str) -> None:
    from chatclient.pending.redis import RedisNonceLedger, RedisPendingToolCallStore

    client, tools = client_and_tools()
    with cuttable(server_url(REDIS_URL)) as (proxy, through):
        store = RedisPendingToolCallStore(through, prefix=prefix)
        ledger = RedisNonceLedger(through, prefix=prefix)
        proxy.lose_next_reply()
        state_id = store.save(paused_state(client))  # the retried save is recognised as the same one
        proxy.lose_next_reply()
        assert store.peek(state_id).awaiting_ids
        take = store.take

        def take_whose_reply_is_lost(state_id: str) -> Any:
            proxy.lose_next_reply()
            return take(state_id)

        store.take = take_whose_reply_is_lost  # type: ignore[method-assign]
        assert client.prompt().resume_from(store, state_id, ALLOW).call().content() == "wired"
        assert proxy.replies_lost == 3 and tools.ran == ["acct-1"]
        with pytest.raises(PendingStateNotFoundError):
            take(state_id)  # single-use still
        with pytest.raises(PendingStateNotFoundError):
            store.peek(state_id)
        assert store.discard(state_id) is False, "a taken state is not one waiting to be resumed"
        assert ledger.redeem("n-1", None)
        proxy.lose_next_reply()
        assert ledger.redeem("n-2", None), "the retried redeem is the same redeemer's"
        assert proxy.replies_lost == 4
        assert not ledger.redeem("n-2", None), "and the nonce is spent"
        store.close()
        ledger.close()


def test_the_async_take_and_redeem_whose_reply_is_lost_go_on(prefix: str) -> None:
    from chatclient.pending.redis import AsyncRedisNonceLedger, AsyncRedisPendingToolCallStore

    client, tools = client_and_tools()
    pending = paused_state(client)

    async def scenario() -> None:
        with cuttable(server_url(REDIS_URL)) as (proxy, through):
            store = AsyncRedisPendingToolCallStore(through, prefix=prefix)
            ledger = AsyncRedisNonceLedger(through, prefix=prefix)
            state_id = await store.save(pending)
            proxy.lose_next_reply()
            assert (await store.take(state_id)).nonce == pending.nonce
            with pytest.raises(PendingStateNotFoundError):
                await store.take(state_id)
            proxy.lose_next_reply()
            assert await ledger.redeem("n-1", None)
            assert not await ledger.redeem("n-1", None)
            assert proxy.replies_lost == 2
            await store.close()
            await ledger.close()

    asyncio.run(scenario())
    assert tools.ran == []


def test_postgres_take_save_and_redeem_whose_reply_is_lost_go_on(prefix: str) -> None:
    from chatclient.pending.postgres import PostgresNonceLedger, PostgresPendingToolCallStore

    client, tools = client_and_tools()
    pending = paused_state(client)
    with cuttable(server_url(POSTGRES_URL)) as (proxy, through):
        store = PostgresPendingToolCallStore(through, prefix=prefix, connect_timeout=1)
        ledger = PostgresNonceLedger(through, prefix=prefix, connect_timeout=1)
        proxy.lose_next_reply(b"INSERT 0 1")
        state_id = store.save(pending)  # the retried insert finds its own row
        assert proxy.replies_lost == 1
        take = store.take

        def take_whose_reply_is_lost(state_id: str) -> Any:
            proxy.lose_next_reply(pending.nonce.encode())  # the answer that carries the state
            return take(state_id)

        store.take = take_whose_reply_is_lost  # type: ignore[method-assign]
        assert client.prompt().resume_from(store, state_id, ALLOW).call().content() == "wired"
        assert proxy.replies_lost == 2 and tools.ran == ["acct-1"]
        for again in (take, store.peek):
            with pytest.raises(PendingStateNotFoundError):
                again(state_id)
        proxy.lose_next_reply(b"n-lost")
        assert ledger.redeem("n-lost", None), "the retried redeem is the same redeemer's"
        assert proxy.replies_lost == 3
        assert not ledger.redeem("n-lost", None), "and the nonce is spent"
        store.close()
        ledger.close()


def test_postgres_async_take_whose_reply_is_lost_goes_on(prefix: str) -> None:
    from chatclient.pending.postgres import AsyncPostgresPendingToolCallStore

    client, _ = client_and_tools()
    pending = paused_state(client)

    async def scenario() -> None:
        with cuttable(server_url(POSTGRES_URL)) as (proxy, through):
            store = AsyncPostgresPendingToolCallStore(through, prefix=prefix, connect_timeout=1)
            await store.open()
            state_id = await store.save(pending)
            proxy.lose_next_reply(pending.nonce.encode())
            assert (await store.take(state_id)).nonce == pending.nonce
            assert proxy.replies_lost == 1
            with pytest.raises(PendingStateNotFoundError):
                await store.take(state_id)
            await store.close()

    asyncio.run(scenario())
