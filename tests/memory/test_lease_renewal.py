"""concurrency="serialize" keeps its lease through a turn longer than the lease's ttl (renewed while
the turn runs), and a lease lost before the write is reported, the turn stored. Time is a fake clock
the test moves from inside the tool; every wait is on an event."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.lease import SessionLeaseLostError
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.memory import FakeClock
from tests.memory.test_serialize import run_turn


class Watched:
    """The repository, telling the test when the turn's token renewed its lease at or after ``mark``."""

    def __init__(self, inner: InMemorySessionRepository, clock: FakeClock) -> None:
        self.inner, self.clock = inner, clock
        self.holder: str | None = None
        self.mark, self.renewed = float("inf"), threading.Event()

    def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
        taken = self.inner.try_lease(session_id, token, ttl)
        if taken and self.holder is None:
            self.holder = token
        elif taken and token == self.holder and self.clock.now >= self.mark:
            self.renewed.set()
        return taken

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def client_with(repository: Watched, slow_tool: Any, **options: Any) -> ChatClient:
    model = ScriptedChatModel([AssistantMessage(tool_calls=[tool_call("slow", {})]), "Done."])
    memory = SessionMemoryAdvisor(repository, concurrency="serialize", lease_ttl=10.0, **options)
    return ChatClient.builder(model).default_tools(slow_tool).default_advisors(memory).build()


@pytest.mark.parametrize("mode", MODES)
def test_a_turn_longer_than_the_lease_ttl_keeps_the_lease(mode: str) -> None:
    clock = FakeClock(1000.0)
    repository = Watched(InMemorySessionRepository(clock=clock), clock)
    seen: dict[str, Any] = {}

    class Slow:
        @tool(description="A slow tool")
        def slow(self) -> str:
            clock.now = 1008.0  # the lease taken at 1000 runs to 1010 unless renewed
            repository.mark = 1008.0
            seen["renewed"] = repository.renewed.wait(10)
            clock.now = 1015.0  # past the first ttl: only a renewal keeps the intruder out
            seen["intruder"] = repository.inner.try_lease("c1", "intruder", 10.0)
            return "slow result"

    client = client_with(repository, Slow(), lease_renew_every=0.001)
    assert run_turn(mode, client.prompt("go").conversation("c1")) == "Done."
    assert seen == {"renewed": True, "intruder": False}
    assert [e.message().role for e in repository.inner.events("c1")] == ["user", "assistant", "tool", "assistant"]
    assert repository.inner.try_lease("c1", "after", 10.0), "released after the turn"


@pytest.mark.parametrize("mode", MODES)
def test_a_lease_lost_before_the_write_is_reported_and_the_turn_stored(mode: str) -> None:
    clock = FakeClock(1000.0)
    repository = Watched(InMemorySessionRepository(clock=clock), clock)

    class Slow:
        @tool(description="A slow tool")
        def slow(self) -> str:
            clock.now = 1011.0  # the lease ran out (no renewal comes: it is due in 1000 s)
            assert repository.inner.try_lease("c1", "intruder", 60.0)
            return "slow result"

    client = client_with(repository, Slow(), lease_renew_every=9.99)
    with pytest.raises(SessionLeaseLostError, match=r"'c1'.*lease_ttl=10.0") as raised:
        run_turn(mode, client.prompt("go").conversation("c1"))
    assert raised.value.session_id == "c1" and raised.value.ttl == 10.0
    assert raised.value.response.chat_response is not None  # type: ignore[attr-defined]
    log = repository.inner.events("c1")
    assert [e.message().role for e in log] == ["user", "assistant", "tool", "assistant"], "stored, once"
    assert not repository.inner.try_lease("c1", "another", 10.0), "the intruder's lease is left alone"
