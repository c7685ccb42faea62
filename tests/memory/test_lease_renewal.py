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


def test_stop_waits_for_a_renewal_in_flight_so_none_lands_after_the_release() -> None:
    """The renewals run in the process's one shared thread; a keeper stopped while its renewal is
    in flight returns only once that renewal ended, so the turn's release comes after it."""
    from chatclient.memory.lease import LeaseKeeper

    entered, go_on = threading.Event(), threading.Event()
    calls: list[str] = []

    class SlowLease:
        def try_lease(self, session_id: str, token: str, ttl: float) -> bool:
            calls.append("renew")
            entered.set()
            assert go_on.wait(10)
            calls.append("renewed")
            return True

        def release_lease(self, session_id: str, token: str) -> bool:
            return True

    keeper = LeaseKeeper(SlowLease(), "c1", "t1", ttl=10.0, every=0.001)
    assert entered.wait(10), "the shared thread renews"

    def stop() -> None:
        keeper.stop()
        calls.append("stopped")

    stopper = threading.Thread(target=stop)
    stopper.start()
    assert not keeper.busy.acquire(blocking=False), "the renewal holds the keeper"
    go_on.set()
    stopper.join(10)
    assert calls[:2] == ["renew", "renewed"] and calls[-1] == "stopped", calls
    assert calls.count("renew") == calls.count("renewed"), "stop came after each renewal it met"
    assert keeper.renew() is False and calls[-1] == "stopped", "a stopped keeper renews no more"


def test_serialized_turns_share_one_renewal_thread() -> None:
    repository = InMemorySessionRepository()
    memory = SessionMemoryAdvisor(repository, concurrency="serialize", lease_ttl=30.0)
    client = ChatClient.builder(ScriptedChatModel(["ok"] * 20)).default_advisors(memory).build()
    for _ in range(20):
        assert client.prompt("hi").conversation("c1").call().content() == "ok"
    names = [t.name for t in threading.enumerate()]
    assert names.count("chatclient-lease-renewals") == 1 and not any(n.startswith("lease-") for n in names)
