"""A pending store or nonce ledger that goes away (through a proxy the test cuts, in front of the
real Redis and PostgreSQL) raises one chatclient error naming the store, never the driver's: at
``save``, ``peek`` and ``take``, sync and async. A resume whose take failed ran nothing and left the
state where it was: once the store is back the same resume runs the tool, once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.errors import PendingStoreError
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision

from .cuttable_proxy import CuttableProxy, cuttable

BACKENDS = ["redis", "postgres"]
ALLOW = ToolCallDecisions.of(ToolCallDecision.allow("w"))
DRIVERS = ("redis", "psycopg", "psycopg_pool")


def store_of(backend: str, url: str, prefix: str, *, asynchronous: bool = False) -> Any:
    if backend == "redis":
        from chatclient.pending.redis import AsyncRedisPendingToolCallStore, RedisPendingToolCallStore

        return (AsyncRedisPendingToolCallStore if asynchronous else RedisPendingToolCallStore)(url, prefix=prefix)
    from chatclient.pending.postgres import AsyncPostgresPendingToolCallStore, PostgresPendingToolCallStore

    cls = AsyncPostgresPendingToolCallStore if asynchronous else PostgresPendingToolCallStore
    return cls(url, prefix=prefix, connect_timeout=1)


class Wire:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(description="Wire money", requires_confirmation=True)
    def wire(self, to: str) -> str:
        self.ran.append(to)
        return f"sent to {to}"


def client_and_tools() -> tuple[ChatClient, Wire]:
    tools = Wire()

    def script(prompt: Any) -> str | AssistantMessage:
        if prompt.messages[-1].role == "tool":
            return "wired"
        return AssistantMessage(tool_calls=[tool_call("wire", {"to": "acct-1"}, id="w")])

    return ChatClient.builder(ScriptedChatModel(script)).default_tools(tools).build(), tools


def paused_state(client: ChatClient) -> PendingToolCalls:
    pending = awaiting_decision(client.prompt("wire my rent").call().chat_client_response())
    assert pending is not None
    return pending


def cut_at_claim(store: Any, proxy: CuttableProxy) -> None:
    """The store goes down between the resume's peek (which passed) and its claim of the state (the
    first compare-and-set on its journal, where a take used to be: the state stays until the turn ends)."""
    record = store.record_progress

    def cut_then_record(state_id: str, version: int, entry: str) -> Any:
        proxy.cut()
        return record(state_id, version, entry)

    store.record_progress = cut_then_record


def assert_names_the_store(error: PendingStoreError, store: Any, operation: str) -> None:
    assert error.store == type(store).__name__
    assert f"{type(store).__name__}.{operation} failed" in str(error)
    assert type(error.__cause__).__module__.split(".")[0] in DRIVERS


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_down_at_the_claim_runs_nothing_and_the_same_resume_runs_when_back(backend: str, prefix: str) -> None:
    client, tools = client_and_tools()
    url = server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)
    with cuttable(url) as (proxy, through):
        store = store_of(backend, through, prefix)
        state_id = store.save(paused_state(client))
        cut_at_claim(store, proxy)
        with pytest.raises(PendingStoreError) as raised:
            client.prompt().resume_from(store, state_id, ALLOW).call().content()
        assert_names_the_store(raised.value, store, "record_progress")
        assert tools.ran == [], "nothing ran"
        store.close()
        proxy.restore()
        back = store_of(backend, through, prefix)  # a fresh client, as after a restart (no reconnect backoff)
        assert back.peek(state_id).awaiting_ids, "the failed claim left the state where it was"
        assert client.prompt().resume_from(back, state_id, ALLOW).call().content() == "wired"
        assert tools.ran == ["acct-1"]
        back.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_peek_and_take_on_a_store_that_is_down_name_the_store(backend: str, prefix: str) -> None:
    client, _ = client_and_tools()
    pending = paused_state(client)
    url = server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)
    with cuttable(url) as (proxy, through):
        store = store_of(backend, through, prefix)
        state_id = store.save(pending)
        proxy.cut()
        calls: tuple[tuple[str, Callable[[], Any]], ...] = (
            ("save", lambda: store.save(pending)),
            ("peek", lambda: store.peek(state_id)),
            ("take", lambda: store.take(state_id)),
        )
        for operation, call in calls:
            with pytest.raises(PendingStoreError) as raised:
                call()
            assert_names_the_store(raised.value, store, operation)
        store.close()
        proxy.restore()
        back = store_of(backend, through, prefix)
        assert back.take(state_id).nonce == pending.nonce, "still stored: nothing took it"
        back.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_async_stores_name_themselves_too_and_a_failed_resume_runs_nothing(backend: str, prefix: str) -> None:
    client, tools = client_and_tools()
    pending = paused_state(client)
    url = server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)

    async def scenario() -> None:
        with cuttable(url) as (proxy, through):
            store = store_of(backend, through, prefix, asynchronous=True)
            if backend == "postgres":
                await store.open()
            state_id = await store.save(pending)
            proxy.cut()
            acalls: tuple[tuple[str, Callable[[], Awaitable[Any]]], ...] = (
                ("save", lambda: store.save(pending)),
                ("peek", lambda: store.peek(state_id)),
                ("take", lambda: store.take(state_id)),
            )
            for operation, acall in acalls:
                with pytest.raises(PendingStoreError) as raised:
                    await acall()
                assert_names_the_store(raised.value, store, operation)
            with pytest.raises(PendingStoreError):
                await client.prompt().resume_from(store, state_id, ALLOW).acall().content()
            assert tools.ran == []
            await store.close()
            proxy.restore()
            back = store_of(backend, through, prefix, asynchronous=True)
            if backend == "postgres":
                await back.open()
            assert await client.prompt().resume_from(back, state_id, ALLOW).acall().content() == "wired"
            assert tools.ran == ["acct-1"]
            await back.close()

    asyncio.run(scenario())
