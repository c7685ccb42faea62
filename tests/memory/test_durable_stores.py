"""Every pending store keeps a turn's journal by compare-and-set: a resume that failed after its tools
ran is continued by a retry, no tool runs twice, and of concurrent retries one wins (real servers)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, cast

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.durable import JournalEntry
from chatclient.errors import PendingStateError, ServerError
from chatclient.pending.state import JournaledStore
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.testing.pending import sample_pending
from tests.memory.test_pending_contract import BACKENDS, aclose, close, make_async_store, make_store
from tests.racing import race


class Hotel:
    def __init__(self) -> None:
        self.booked: list[str] = []

    @tool(requires_confirmation=True)
    def book(self, hotel: str) -> str:
        """Book a hotel."""
        self.booked.append(hotel)
        return f"booked {hotel}"


ALLOW = ToolCallDecisions.of(ToolCallDecision.allow("b1", approver="ann"))
BOOK = AssistantMessage(None, tool_calls=[tool_call("book", {"hotel": "Ritz"}, id="b1")])


def _entry(status: str, by: str = "a") -> str:
    return JournalEntry(status=status, decisions="d", by=by).dump()  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_journal_moves_by_compare_and_set_while_the_state_waits(backend: str, tmp_path: Path, prefix: str) -> None:
    store = make_store(backend, tmp_path, prefix, 3600.0)
    try:
        assert isinstance(cast(object, store), JournaledStore), "every built-in store keeps a journal"
        state_id = store.save(sample_pending())
        assert store.progress(state_id) == (0, None)
        assert store.record_progress(state_id, 0, _entry("running"))
        assert not store.record_progress(state_id, 0, _entry("running", "b")), "a second writer at version 0 loses"
        assert store.record_progress(state_id, 1, _entry("recorded"))
        assert not store.record_progress(state_id, 1, _entry("completed", "b"))
        assert store.progress(state_id) == (2, _entry("recorded"))
        assert not store.record_progress("no-such-state", 0, _entry("running")), "no journal without its state"
        store.take(state_id)
        assert not store.record_progress(state_id, 2, _entry("completed")), "a taken state's journal is closed"
    finally:
        close(store)


class BarrierStore:
    """Both retries read the journal before either writes: the race the claim settles."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.barrier = inner, threading.Barrier(2)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def progress(self, state_id: str) -> tuple[int, str | None]:
        found: tuple[int, str | None] = self.inner.progress(state_id)
        self.barrier.wait(timeout=20)
        return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failed_resume_is_retried_to_the_end_and_of_two_concurrent_retries_one_wins(
    backend: str, tmp_path: Path, prefix: str
) -> None:
    hotel, store = Hotel(), make_store(backend, tmp_path, prefix, 3600.0)
    try:
        model = ScriptedChatModel([BOOK, ServerError("503"), "Booked.", "Booked."])
        client = ChatClient.builder(model).build()
        paused = client.prompt("Book the Ritz").tools(hotel).call().chat_client_response()
        state_id = store.save(paused.context["chatclient.tool_loop.pending"])
        with pytest.raises(ServerError):
            client.prompt().tools(hotel).resume_from(store, state_id, ALLOW).call().content()
        racing = BarrierStore(store)
        rounds_before = len(model.prompts)
        outcomes = race(lambda: client.prompt().tools(hotel).resume_from(racing, state_id, ALLOW).call().content())
        assert sorted(type(o).__name__ for o in outcomes) == ["TurnInProgressError", "str"]
        assert len(model.prompts) == rounds_before + 1, "the loser stopped at its claim, before the model"
        assert hotel.booked == ["Ritz"]
        with pytest.raises(Exception, match="No pending tool calls"):
            store.peek(state_id)
    finally:
        close(store)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["acall", "astream"])
def test_an_async_store_continues_a_failed_resume(backend: str, mode: str, tmp_path: Path, prefix: str) -> None:
    async def run(spec: Any) -> str | None:
        if mode == "acall":
            return await spec.acall().content()  # type: ignore[no-any-return]
        stream = spec.astream()
        async for _ in stream.events():
            pass
        return stream.response.chat_response.text  # type: ignore[no-any-return]

    async def scenario() -> None:
        hotel, store = Hotel(), await make_async_store(backend, tmp_path, prefix, 3600.0)
        try:
            model = ScriptedChatModel([BOOK, ServerError("503"), "Booked."])
            client = ChatClient.builder(model).build()
            paused = await client.prompt("Book the Ritz").tools(hotel).acall().chat_client_response()
            state_id = await store.save(paused.context["chatclient.tool_loop.pending"])
            with pytest.raises(ServerError) as raised:
                await run(client.prompt().tools(hotel).resume_from(store, state_id, ALLOW))
            _, text = await store.progress(state_id)
            assert JournalEntry.load(text).status == "recorded"
            spec = client.prompt().tools(hotel).continue_turn(raised.value.continuation)
            assert await run(spec) == "Booked."
            assert hotel.booked == ["Ritz"]
            with pytest.raises(PendingStateError):  # the state is gone
                await store.peek(state_id)
        finally:
            await aclose(store)

    asyncio.run(scenario())


SECRET = b"0123456789abcdef-journal"


def _keyed(backend: str, tmp_path: Path, prefix: str) -> Any:
    if backend == "memory":
        from chatclient.pending.state import InMemoryPendingToolCallStore

        return InMemoryPendingToolCallStore(secret=SECRET)
    if backend == "sqlite":
        from chatclient.pending.state import SqlitePendingToolCallStore

        return SqlitePendingToolCallStore(tmp_path / "keyed.db", prefix=prefix, secret=SECRET)
    from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

    if backend == "redis":
        from chatclient.pending.redis import RedisPendingToolCallStore

        return RedisPendingToolCallStore(server_url(REDIS_URL), prefix=prefix, secret=SECRET)
    from chatclient.pending.postgres import PostgresPendingToolCallStore

    return PostgresPendingToolCallStore(server_url(POSTGRES_URL), prefix=prefix, secret=SECRET)


def _rewrite_journal(backend: str, store: Any, state_id: str, edit: Any) -> None:
    """What a writer of the storage without the secret could do: change the kept entry."""
    if backend == "memory":
        version, text = store._journal[state_id]
        store._journal[state_id] = (version, edit(text))
    elif backend == "sqlite":
        db = store._connect()
        (text,) = db.execute(f"SELECT entry FROM {store._journal} WHERE id = ?", (state_id,)).fetchone()
        db.execute(f"UPDATE {store._journal} SET entry = ? WHERE id = ?", (edit(text), state_id))
    elif backend == "redis":
        key = store._journal_prefix + state_id
        store._redis.set(key, edit(store._redis.get(key).decode()))
    else:
        with store._pool.connection() as conn:
            (text,) = conn.execute(f"SELECT entry FROM {store._sql.journal} WHERE id = %s", (state_id,)).fetchone()
            conn.execute(f"UPDATE {store._sql.journal} SET entry = %s WHERE id = %s", (edit(text), state_id))


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_a_secret_a_rewritten_journal_is_refused(backend: str, tmp_path: Path, prefix: str) -> None:
    from chatclient.errors import PendingStateTamperedError

    store = _keyed(backend, tmp_path, prefix)
    try:
        state_id = store.save(sample_pending())
        entry = JournalEntry(status="recorded", decisions="d", by="a").dump()
        assert store.record_progress(state_id, 0, entry)
        assert store.progress(state_id) == (1, entry)
        _rewrite_journal(backend, store, state_id, lambda text: text.replace('"by":"a"', '"by":"z"'))
        with pytest.raises(PendingStateTamperedError):
            store.progress(state_id)
    finally:
        close(store)
