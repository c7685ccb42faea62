"""concurrency="serialize": two turns on one conversation at once; the second waits for the
first's lease and sees its messages (proved with events, on every backend and in all four modes)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ConfigurationError, UserMessage
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.lease import SessionBusyError
from chatclient.prompt import Prompt
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url


def sync_repository(backend: str, tmp_path: Path, prefix: str) -> Any:
    if backend == "memory":
        return InMemorySessionRepository()
    if backend == "sqlite":
        from chatclient.memory.sqlite import SqliteSessionRepository

        return SqliteSessionRepository(tmp_path / "s.db", prefix=prefix)
    if backend == "redis":
        from chatclient.memory.redis import RedisSessionRepository

        return RedisSessionRepository(server_url(REDIS_URL), prefix=prefix)
    from chatclient.memory.postgres import PostgresSessionRepository

    return PostgresSessionRepository(server_url(POSTGRES_URL), prefix=prefix)


def run_turn(mode: str, spec: Any) -> str | None:
    """One turn in ``mode``, in this thread (an async mode runs its own loop, closed after)."""
    if mode == "call":
        return spec.call().content()  # type: ignore[no-any-return]
    if mode == "stream":
        stream = spec.stream()
        list(stream.events())
        return stream.response.text  # type: ignore[no-any-return]
    if mode == "acall":
        return asyncio.run(spec.acall().content())  # type: ignore[no-any-return]

    async def collect() -> str | None:
        stream = spec.astream()
        [event async for event in stream.events()]
        return stream.response.text  # type: ignore[no-any-return]

    return asyncio.run(collect())


class Signalling:
    """The repository, telling the test when a turn found the lease taken."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.refused = inner, threading.Event()

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        taken = bool(self.inner.try_lease(session_id, token, ttl))
        if not taken:
            self.refused.set()
        return taken

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["memory", "sqlite", "redis", "postgres"])
def test_the_second_of_two_concurrent_turns_waits_and_sees_the_first(
    backend: str, mode: str, tmp_path: Path, prefix: str
) -> None:
    inner = sync_repository(backend, tmp_path, prefix)
    repository = Signalling(inner)
    first_in_model = threading.Event()

    def answer(prompt: Prompt) -> str:
        if prompt.messages[-1] == UserMessage("first"):
            first_in_model.set()
            assert repository.refused.wait(10), "the second turn never tried the lease"
            return "first answer"
        return "second answer"

    model = ScriptedChatModel(answer)
    memory = SessionMemoryAdvisor(repository, concurrency="serialize")
    client = ChatClient.builder(model).default_advisors(memory).build()
    results: dict[str, Any] = {}

    def turn(text: str) -> None:
        try:
            results[text] = run_turn(mode, client.prompt(text).conversation("c1"))
        except BaseException as exc:  # reported below
            results[text] = exc

    first = threading.Thread(target=turn, args=("first",))
    first.start()
    assert first_in_model.wait(10)
    second = threading.Thread(target=turn, args=("second",))
    second.start()
    first.join(20)
    second.join(20)
    assert results == {"first": "first answer", "second": "second answer"}
    assert model.prompts[1].messages == (UserMessage("first"), AssistantMessage("first answer"), UserMessage("second"))
    assert [e.message() for e in inner.events("c1")][::2] == [UserMessage("first"), UserMessage("second")]
    assert inner.try_lease("c1", "after", 1.0), "the lease was released"
    if hasattr(inner, "close"):
        inner.close()


def test_a_turn_gives_up_when_the_lease_stays_taken_and_the_policy_needs_leases() -> None:
    repository = InMemorySessionRepository()
    assert repository.try_lease("c1", "someone else", 60.0)
    memory = SessionMemoryAdvisor(repository, concurrency="serialize", lease_timeout=0.0)
    client = ChatClient.builder(ScriptedChatModel(["never"])).default_advisors(memory).build()
    with pytest.raises(SessionBusyError):
        client.prompt("hello").conversation("c1").call().content()
    assert repository.events("c1") == []

    class NoLeases:
        def append(self, *args: Any, **kwargs: Any) -> Any: ...

    with pytest.raises(ConfigurationError, match="leases"):
        SessionMemoryAdvisor(NoLeases(), concurrency="serialize")  # type: ignore[arg-type]
    assert SessionMemoryAdvisor(repository, concurrency="serialise").concurrency == "serialize"  # type: ignore[arg-type]
