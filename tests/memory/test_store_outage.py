"""The real Redis and PostgreSQL going away mid-conversation (through a proxy the test cuts, so the
shared servers keep running): the turn whose write fails comes back as ``SessionWriteError`` with its
events, stored by ``error.retry()`` once the server is back; after a restart the next turn works."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.memory import SessionMemoryAdvisor, SessionWriteError
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

from .cuttable_proxy import CuttableProxy, cuttable

BACKENDS = ["redis", "postgres"]


def url_of(backend: str) -> str:
    return server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)


def repository(backend: str, url: str, prefix: str, *, asynchronous: bool = False, connect_timeout: float = 5) -> Any:
    if backend == "redis":
        from chatclient.memory.redis import AsyncRedisSessionRepository, RedisSessionRepository

        return (AsyncRedisSessionRepository if asynchronous else RedisSessionRepository)(url, prefix=prefix)
    from chatclient.memory.postgres import AsyncPostgresSessionRepository, PostgresSessionRepository

    cls = AsyncPostgresSessionRepository if asynchronous else PostgresSessionRepository
    return cls(url, prefix=prefix, connect_timeout=connect_timeout)


class Charger:
    """A client whose second turn's model call cuts the proxy after its tool ran."""

    def __init__(self, proxy: CuttableProxy, repo: Any) -> None:
        self.ran: list[int] = []
        self.cut_in_turn = 0
        self.turn = 0

        @tool(description="Charge a card")
        def charge(amount: int) -> str:
            self.ran.append(amount)
            return "charged"

        def script(prompt: Any) -> str | AssistantMessage:
            if prompt.messages[-1].role == "tool":
                if self.turn == self.cut_in_turn:
                    proxy.cut()  # the store goes away while the turn finishes
                return f"charged for turn {self.turn}"
            self.turn += 1
            return AssistantMessage(tool_calls=[tool_call("charge", {"amount": self.turn})])

        model = ScriptedChatModel(script)
        self.client = (
            ChatClient.builder(model).default_tools(charge).default_advisors(SessionMemoryAdvisor(repo)).build()
        )


def turns_in(backend: str, prefix: str, conversation: str) -> list[str]:
    direct = repository(backend, url_of(backend), prefix)
    try:
        return [e.turn_id for e in direct.events(conversation) if e.type == "message"]
    finally:
        direct.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_down_during_a_turn_hands_the_turn_back_and_its_retry_stores_it(backend: str, prefix: str) -> None:
    with cuttable(url_of(backend)) as (proxy, through):
        repo = repository(backend, through, prefix, connect_timeout=1)
        charger = Charger(proxy, repo)
        charger.cut_in_turn = 2
        assert charger.client.prompt("pay").conversation("c").call().content() == "charged for turn 1"
        with pytest.raises(SessionWriteError) as raised:
            charger.client.prompt("pay again").conversation("c").call().content()
        error = raised.value
        assert charger.ran == [1, 2] and error.conversation_id == "c"
        assert type(error.__cause__).__module__.split(".")[0] in ("redis", "psycopg", "psycopg_pool")
        assert error.response.text == "charged for turn 2"
        repo.close()
        proxy.restore()
        # The store is back (say, in another process): the events on the error are all it needs.
        back = repository(backend, through, prefix)
        assert back.append(error.conversation_id, error.events).appended == 4
        assert back.append(error.conversation_id, error.events).appended == 0, "a second store is a replay"
        back.close()
    turns = turns_in(backend, prefix, "c")
    assert len(turns) == 8 and len(set(turns)) == 2, "both whole turns, each once"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_async_faces_hand_the_turn_back_too(backend: str, prefix: str) -> None:
    async def scenario() -> None:
        with cuttable(url_of(backend)) as (proxy, through):
            repo = repository(backend, through, prefix, asynchronous=True, connect_timeout=1)
            if backend == "postgres":
                await repo.open()
            charger = Charger(proxy, repo)
            charger.cut_in_turn = 2
            assert await charger.client.prompt("pay").conversation("c").acall().content() == "charged for turn 1"
            with pytest.raises(SessionWriteError) as raised:
                await charger.client.prompt("pay again").conversation("c").acall().content()
            await repo.close()
            proxy.restore()
            back = repository(backend, through, prefix, asynchronous=True)
            if backend == "postgres":
                await back.open()
            raised.value.repository = back  # the error's retry() on the store that is back
            assert (await raised.value.aretry()).appended == 4
            await back.close()

    asyncio.run(scenario())
    assert len(turns_in(backend, prefix, "c")) == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_after_a_restart_the_next_turns_work(backend: str, prefix: str) -> None:
    with cuttable(url_of(backend)) as (proxy, through):
        repo = repository(backend, through, prefix)
        charger = Charger(proxy, repo)
        assert charger.client.prompt("pay").conversation("c").call().content() == "charged for turn 1"
        proxy.cut()  # every pooled connection dies, as in a server restart
        proxy.restore()
        for n in (2, 3):
            assert charger.client.prompt("pay").conversation("c").call().content() == f"charged for turn {n}"
        repo.close()
    assert len(set(turns_in(backend, prefix, "c"))) == 3
