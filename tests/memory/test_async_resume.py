"""``spec.resume_from(async_store, ...)``: the async drivers peek and take the state with ``await``
on the request's own loop (real SQLite file, Redis, PostgreSQL), with the sync stores' contract —
the tool runs once, concurrent resumes have one winner, an expired state runs nothing — and the
sync terminals refuse an async store before anything runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ConfigurationError,
    PendingStateExpiredError,
    PendingStateNotFoundError,
    ToolCallDecision,
    ToolCallDecisionError,
    ToolCallDecisions,
)
from chatclient.errors import TurnInProgressError
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision
from tests.memory.test_async_ledger import Tools
from tests.memory.test_pending_contract import aclose, make_async_store

BACKENDS = ["sqlite", "redis", "postgres"]
ALLOW = ToolCallDecisions.of(ToolCallDecision.allow("b1"))


def client_for(tools: Tools) -> ChatClient:
    """A model that asks for the gated tool, then answers (as many times as the turn runs)."""
    replies: list[Any] = [AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")])]
    return ChatClient.builder(ScriptedChatModel([*replies, *["Booked."] * 8])).default_tools(tools).build()


async def paused_in(store: Any, client: ChatClient) -> str:
    pending = awaiting_decision(await client.prompt("Book for Ada").acall().chat_client_response())
    assert pending is not None
    state_id: str = await store.save(pending)
    return state_id


@pytest.fixture(params=BACKENDS)
async def astore(request: pytest.FixtureRequest, tmp_path: Path, prefix: str) -> AsyncIterator[Any]:
    store = await make_async_store(request.param, tmp_path, prefix, 3600.0)
    yield store
    await aclose(store)


async def test_acall_resumes_from_an_async_store_and_the_tool_runs_once(astore: Any) -> None:
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(astore, client)
    response = await client.prompt().resume_from(astore, state_id, ALLOW).acall().chat_client_response()
    assert response.text == "Booked." and tools.booked == 1
    with pytest.raises(PendingStateNotFoundError):
        await astore.peek(state_id)
    with pytest.raises(PendingStateNotFoundError):
        await client.prompt().resume_from(astore, state_id, ALLOW).acall().content()
    assert tools.booked == 1


async def test_astream_resumes_from_an_async_store_and_the_tool_runs_once(astore: Any) -> None:
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(astore, client)
    stream = client.prompt().resume_from(astore, state_id, ALLOW).astream()
    assert "".join([text async for text in stream.content()]) == "Booked."
    assert tools.booked == 1 and stream.response.text == "Booked."
    with pytest.raises(PendingStateNotFoundError):
        async for _ in client.prompt().resume_from(astore, state_id, ALLOW).astream().events():
            pass
    assert tools.booked == 1


async def test_eight_concurrent_resumes_of_one_state_run_the_tool_once(astore: Any) -> None:
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(astore, client)
    start = asyncio.Event()

    async def resume() -> str | None:
        await start.wait()
        return await client.prompt().resume_from(astore, state_id, ALLOW).acall().content()

    racers = [asyncio.create_task(resume()) for _ in range(8)]
    await asyncio.sleep(0)  # let every task reach the gate
    start.set()
    results = await asyncio.gather(*racers, return_exceptions=True)
    assert results.count("Booked.") == 1, results
    losers = (PendingStateNotFoundError, TurnInProgressError)  # lost the claim, or came after the turn ended
    assert all(isinstance(r, losers) for r in results if r != "Booked."), results
    assert tools.booked == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_resume_after_expiry_runs_nothing(backend: str, tmp_path: Path, prefix: str) -> None:
    store = await make_async_store(backend, tmp_path, prefix, 0.1)
    try:
        tools = Tools()
        client = client_for(tools)
        state_id = await paused_in(store, client)
        await asyncio.sleep(0.3)  # past the store's 0.1 s ttl, as the store contract does
        with pytest.raises((PendingStateExpiredError, PendingStateNotFoundError)):
            await client.prompt().resume_from(store, state_id, ALLOW).acall().content()
        assert tools.booked == 0
    finally:
        await aclose(store)


class GatedStore:
    """An async store whose peek and take wait for another task: they finish only if the loop runs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.waiting, self.go = asyncio.Event(), asyncio.Event()
        self.calls: list[str] = []

    async def save(self, pending: PendingToolCalls) -> str:
        state_id: str = await self.inner.save(pending)
        return state_id

    async def peek(self, state_id: str) -> PendingToolCalls:
        return await self._gated("peek", self.inner.peek(state_id))

    async def take(self, state_id: str) -> PendingToolCalls:
        return await self._gated("take", self.inner.take(state_id))

    async def _gated(self, name: str, call: Any) -> PendingToolCalls:
        self.calls.append(name)
        self.waiting.set()
        await self.go.wait()
        self.go.clear()
        pending: PendingToolCalls = await call
        return pending


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_the_loop_runs_other_tasks_while_the_store_is_awaited(backend: str, tmp_path: Path, prefix: str) -> None:
    inner = await make_async_store(backend, tmp_path, prefix, 3600.0)
    store = GatedStore(inner)
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(store, client)

    async def other_task() -> int:
        """Lets each store call through only once it is waiting, i.e. while the resume is suspended."""
        released = 0
        while released < 3:  # prepare's peek, the loop's peek, the take
            await store.waiting.wait()
            store.waiting.clear()
            released += 1
            store.go.set()
        return released

    resumed, released = await asyncio.gather(
        client.prompt().resume_from(store, state_id, ALLOW).acall().content(), other_task()
    )
    assert resumed == "Booked." and released == 3 and tools.booked == 1
    assert store.calls == ["peek", "peek", "take"]
    await aclose(inner)


async def test_call_and_stream_refuse_an_async_store_before_anything_runs(tmp_path: Path, prefix: str) -> None:
    store = await make_async_store("sqlite", tmp_path, prefix, 3600.0)
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(store, client)
    spec = client.prompt().resume_from(store, state_id, ALLOW)
    with pytest.raises(ConfigurationError, match="acall"):
        spec.call().content()
    with pytest.raises(ConfigurationError, match="astream"):
        list(spec.stream().content())
    assert tools.booked == 0
    assert await store.peek(state_id) is not None  # still there for the right resume
    assert await spec.acall().content() == "Booked." and tools.booked == 1
    await aclose(store)


async def test_a_refused_decision_leaves_the_state_in_the_async_store(astore: Any) -> None:
    tools = Tools()
    client = client_for(tools)
    state_id = await paused_in(astore, client)
    wrong = ToolCallDecisions.of(ToolCallDecision.allow("not-a-paused-call"))
    with pytest.raises(ToolCallDecisionError):
        async for _ in client.prompt().resume_from(astore, state_id, wrong).astream().events():
            pass
    assert tools.booked == 0
    assert isinstance(await astore.peek(state_id), PendingToolCalls), "still there for the right decision"
    assert await client.prompt().resume_from(astore, state_id, ALLOW).acall().content() == "Booked."
    assert tools.booked == 1


async def test_entity_on_acall_resumes_from_an_async_store(tmp_path: Path, prefix: str) -> None:
    store = await make_async_store("sqlite", tmp_path, prefix, 3600.0)
    tools = Tools()
    ask = AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")])
    client = ChatClient.builder(ScriptedChatModel([ask, '{"name": "Ada"}'])).default_tools(tools).build()
    state_id = await paused_in(store, client)
    booked = await client.prompt().resume_from(store, state_id, ALLOW).acall().entity(dict[str, str])
    assert booked == {"name": "Ada"} and tools.booked == 1
    await aclose(store)
