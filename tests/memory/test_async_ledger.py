"""The async tool loop awaits an async nonce ledger (Redis, PostgreSQL, SQLite faces) instead of
blocking the event loop, and a second resume of the same state is still refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from advisors import ToolCallingAdvisor
from chatclient import (
    AssistantMessage,
    ChatClient,
    PendingStateReusedError,
    ToolCallDecision,
    ToolCallDecisions,
    tool,
)
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url
from chatclient.tools.confirmation import awaiting_decision


class Tools:
    def __init__(self) -> None:
        self.booked = 0

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str) -> str:
        self.booked += 1
        return f"Booked {name}"


class GatedLedger:
    """An async ledger whose redeem waits for another task: it finishes only if the loop runs."""

    def __init__(self) -> None:
        self.started, self.go, self.used = asyncio.Event(), asyncio.Event(), set[str]()

    async def redeem(self, nonce: str, expires_at: float | None) -> bool:
        self.started.set()
        await self.go.wait()
        fresh = nonce not in self.used
        self.used.add(nonce)
        return fresh

    async def release(self, nonce: str) -> None:
        self.used.discard(nonce)


def client_with(ledger: Any, tools: Tools) -> ChatClient:
    model = ScriptedChatModel([AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")]), "Booked."])
    builder = ChatClient.builder(model).default_tools(tools)
    return builder.tool_calling_advisor(ToolCallingAdvisor(nonce_ledger=ledger)).build()


async def test_the_async_loop_awaits_the_ledger_while_other_tasks_run() -> None:
    tools, ledger = Tools(), GatedLedger()
    client = client_with(ledger, tools)
    pending = awaiting_decision(await client.prompt("Book for Ada").acall().chat_client_response())
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow("b1"))

    async def unblock() -> None:
        await ledger.started.wait()  # reached only while the resume waits on the ledger
        ledger.go.set()

    resumed, _ = await asyncio.gather(client.prompt().resume(pending, decisions).acall().content(), unblock())
    assert resumed == "Booked." and tools.booked == 1
    with pytest.raises(PendingStateReusedError):
        await client.prompt().resume(pending, decisions).acall().content()
    assert tools.booked == 1


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
async def test_each_async_ledger_face_makes_a_pause_single_use(backend: str, tmp_path: Path, prefix: str) -> None:
    ledger: Any
    if backend == "sqlite":
        from chatclient.pending.sqlite import AsyncSqliteNonceLedger

        ledger = AsyncSqliteNonceLedger(tmp_path / "nonces.db", prefix=prefix)
    elif backend == "redis":
        from chatclient.pending.redis import AsyncRedisNonceLedger

        ledger = AsyncRedisNonceLedger(server_url(REDIS_URL), prefix=prefix)
    else:
        from chatclient.pending.postgres import AsyncPostgresNonceLedger

        ledger = AsyncPostgresNonceLedger(server_url(POSTGRES_URL), prefix=prefix)
        await ledger.open()
    tools = Tools()
    client = client_with(ledger, tools)
    pending = awaiting_decision(await client.prompt("Book for Ada").acall().chat_client_response())
    assert pending is not None
    decisions = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    assert await client.prompt().resume(pending, decisions).acall().content() == "Booked."
    with pytest.raises(PendingStateReusedError):
        async for _ in client.prompt().resume(pending, decisions).astream().content():
            pass
    assert tools.booked == 1
    if hasattr(ledger, "close"):
        await ledger.close()
