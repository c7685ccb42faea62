"""A conversation's turn journals expire with it (issue 31): once a session's ``ttl`` has run out, its
unfinished turn is gone with its log, and a new tool turn is not refused by a journal from the
conversation's previous life; while it lives, the unfinished turn still blocks new ones. On every
backend, time moved by the repositories' clocks (Redis: by the server expiring the keys), no sleeping."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.errors import ServerError
from chatclient.memory import SessionMemoryAdvisor
from chatclient.memory.journal import UnfinishedTurnError
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.testing.memory import FakeClock
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

TTL = 600.0
CHARGE = AssistantMessage(None, tool_calls=[tool_call("charge", {"amount": 120}, id="c1")])
WEATHER = AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="w1")])


class Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool
    def charge(self, amount: int) -> str:
        """Charge the card."""
        self.ran.append(f"charge {amount}")
        return f"charged {amount}"

    @tool(idempotent=True)
    def weather(self, city: str) -> str:
        """The weather."""
        self.ran.append(city)
        return "sunny"


def _repository(backend: str, tmp_path: Path, prefix: str, clock: FakeClock, ttl: float = TTL) -> Any:
    if backend == "memory":
        from chatclient.memory import InMemorySessionRepository

        return InMemorySessionRepository(clock, ttl=ttl)
    if backend == "sqlite":
        from chatclient.memory.sqlite import SqliteSessionRepository

        return SqliteSessionRepository(tmp_path / "sessions.db", prefix=prefix, clock=clock, ttl=ttl)
    if backend == "redis":
        from chatclient.memory.redis import RedisSessionRepository

        return RedisSessionRepository(server_url(REDIS_URL), prefix=prefix.replace("_", ":"), clock=clock, ttl=ttl)
    from chatclient.memory.postgres import PostgresSessionRepository

    return PostgresSessionRepository(server_url(POSTGRES_URL), prefix=prefix, clock=clock, ttl=ttl)


def _client(model: ScriptedChatModel, repository: Any) -> ChatClient:
    return ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository)).build()


def _leave_an_unfinished_turn(repository: Any, tools: Tools) -> None:
    """One stored turn, then a tool turn whose round after the tool failed: its journal stays."""
    model = ScriptedChatModel(["Hello.", CHARGE, ServerError("503")])
    client = _client(model, repository)
    assert client.prompt("Hi").conversation("c1").call().content() == "Hello."
    with pytest.raises(ServerError):
        client.prompt("Charge").tools(tools).conversation("c1").call().content()
    assert SessionMemoryAdvisor(repository).unfinished_turn("c1") is not None


def _a_new_tool_turn_goes_on(repository: Any, tools: Tools) -> None:
    client = _client(ScriptedChatModel([WEATHER, "Sunny."]), repository)
    assert client.prompt("Weather?").tools(tools).conversation("c1").call().content() == "Sunny."
    roles = [e.message().role for e in repository.events("c1") if e.type == "message"]
    assert roles == ["user", "assistant", "tool", "assistant"], "a fresh log: the expired turns are gone"
    assert repository.turn_journals("c1") == [], "the old journal went when the session started afresh"


def _a_new_tool_turn_is_refused(repository: Any, tools: Tools) -> None:
    client = _client(ScriptedChatModel([WEATHER, "Sunny."]), repository)
    with pytest.raises(UnfinishedTurnError):
        client.prompt("Weather?").tools(tools).conversation("c1").call().content()


def _close(*repositories: Any) -> None:
    for repository in repositories:
        getattr(repository, "close", lambda: None)()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_an_expired_conversation_drops_its_unfinished_turn(backend: str, tmp_path: Path, prefix: str) -> None:
    clock, tools = FakeClock(1_000_000.0), Tools()
    repository = _repository(backend, tmp_path, prefix, clock)
    try:
        _leave_an_unfinished_turn(repository, tools)
        clock.now += TTL - 1
        _a_new_tool_turn_is_refused(repository, tools)  # still alive: the unfinished turn still holds
        assert SessionMemoryAdvisor(repository).unfinished_turn("c1") is not None
        clock.now += 1  # ttl seconds after the last append
        assert SessionMemoryAdvisor(repository).unfinished_turn("c1") is None
        _a_new_tool_turn_goes_on(repository, tools)
        assert tools.ran == ["charge 120", "Oslo"]
    finally:
        _close(repository)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_expiry_sweep_deletes_the_journals_too(backend: str, tmp_path: Path, prefix: str) -> None:
    clock, tools = FakeClock(1_000_000.0), Tools()
    repository = _repository(backend, tmp_path, prefix, clock)
    try:
        _leave_an_unfinished_turn(repository, tools)
        assert repository.delete_expired(clock.now + TTL - 1) == 0
        assert len(repository.turn_journals("c1")) == 1, "a live session keeps its journal through a sweep"
        assert repository.delete_expired(clock.now + TTL) == 1
        assert repository.turn_journals("c1") == []
        assert repository.write_turn_journal("c1", "t9", 0, "x"), "no old row is in the way"
    finally:
        _close(repository)


def test_a_journal_written_to_an_expired_conversation_starts_it_afresh(tmp_path: Path, prefix: str) -> None:
    """A new turn on an expired conversation journals before it appends: its journal must not be
    hidden (or later deleted) as the old session's."""
    for backend in ("memory", "sqlite"):
        clock, tools = FakeClock(1_000_000.0), Tools()
        repository = _repository(backend, tmp_path, f"{prefix}{backend}_", clock)
        try:
            _leave_an_unfinished_turn(repository, tools)
            clock.now += TTL
            assert repository.write_turn_journal("c1", "t9", 0, "new")
            assert repository.turn_journals("c1") == [("t9", 1, "new")], backend
            assert repository.events("c1") == []
        finally:
            _close(repository)


def test_postgres_expired_conversation_drops_its_unfinished_turn(prefix: str) -> None:
    """PostgreSQL judges age by its own clock: the turns are written 500 s in the past, live under a
    600 s ttl and expired under a 400 s one (the same tables, seen by a second repository)."""
    clock, tools = FakeClock(time.time() - 500.0), Tools()
    live = _repository("postgres", Path(), prefix, clock)
    later = _repository("postgres", Path(), prefix, clock, ttl=400.0)
    try:
        _leave_an_unfinished_turn(live, tools)
        _a_new_tool_turn_is_refused(live, tools)
        assert SessionMemoryAdvisor(later).unfinished_turn("c1") is None
        clock.now = time.time()
        _a_new_tool_turn_goes_on(later, tools)
        assert SessionMemoryAdvisor(live).unfinished_turn("c1") is None
        live.delete("c1")
        clock.now = time.time() - 500.0
        _leave_an_unfinished_turn(live, tools)
        assert later.delete_expired() == 1
        assert live.turn_journals("c1") == [], "the sweep took the journal with the session"
    finally:
        live.delete("c1")
        _close(live, later)


def test_redis_journal_keys_expire_with_the_session(prefix: str) -> None:
    import redis

    clock, tools = FakeClock(), Tools()
    repository = _repository("redis", Path(), prefix, clock)
    key_prefix = prefix.replace("_", ":")
    client = redis.Redis.from_url(server_url(REDIS_URL))
    base = f"{key_prefix}session:{{c1}}"
    log, journal = f"{base}:log", f"{base}:turn-journal"

    def pttls() -> tuple[int, int]:
        with client.pipeline(transaction=True) as pipe:  # both read at one instant
            pipe.pttl(log)
            pipe.pttl(journal)
            left = pipe.execute()
        return int(left[0]), int(left[1])

    try:
        _leave_an_unfinished_turn(repository, tools)
        log_left, journal_left = pttls()
        assert 0 < log_left <= TTL * 1000 and abs(log_left - journal_left) <= 1, "one expiry for the session"
        for key in client.keys(f"{base}:*"):
            client.pexpire(key, 5_000)  # as if the session had idled; the next append renews them all
        repository.append("c1", [])  # an empty batch renews nothing
        assert pttls()[1] <= 5_000
        from chatclient.memory.log import turn_events
        from chatclient.messages import UserMessage

        repository.append("c1", turn_events("t2", [UserMessage("note")]))
        log_left, journal_left = pttls()
        assert journal_left > 5_000 and abs(log_left - journal_left) <= 1
        _a_new_tool_turn_is_refused(repository, tools)
        for key in client.keys(f"{base}:*"):  # the server expires them, together
            client.pexpireat(key, 1)
        assert SessionMemoryAdvisor(repository).unfinished_turn("c1") is None
        _a_new_tool_turn_goes_on(repository, tools)
        assert client.pttl(journal) == -2, "the turn cleared its journal"
        repository.write_turn_journal("c2", "t1", 0, "x")  # a conversation with no keys yet: the ttl
        assert 0 < client.pttl(f"{key_prefix}session:{{c2}}:turn-journal") <= TTL * 1000
    finally:
        repository.delete("c1")
        repository.delete("c2")
        repository.close()
        client.close()
