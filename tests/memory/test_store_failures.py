"""A turn is never lost silently: a store that fails or refuses the write raises one chatclient error
carrying the completed turn, in all four modes, and a resume whose write failed can still be stored."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.errors import PendingStateReusedError
from chatclient.memory import (
    AsyncInMemorySessionRepository,
    ConcurrentTurnError,
    InMemorySessionRepository,
    SessionMemoryAdvisor,
    SessionStoreError,
    SessionWriteError,
    VersionConflict,
)
from chatclient.memory.log import AppendResult, NewEvent, SessionEvent
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import awaiting_decision


class StoreDown(ConnectionError):
    """What a driver raises when the server went away (redis-py's and psycopg's are OSError-like)."""


class Failing:
    """Fails the first ``appends`` appends (and every read while ``reads_fail``), then delegates."""

    def __init__(self, inner: InMemorySessionRepository, appends: int = 0, error: type[Exception] = StoreDown) -> None:
        self.inner, self.appends, self.error, self.reads_fail, self.attempts = inner, appends, error, False, 0

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        self.attempts += 1
        if self.appends > 0:
            self.appends -= 1
            raise self.error("store went away")
        return self.inner.append(session_id, events, expected_version=expected_version)

    def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        if self.reads_fail:
            raise self.error("store went away")
        return self.inner.events(session_id, after_seq=after_seq, last=last, types=types)

    def version(self, session_id: str) -> int:
        return self.inner.version(session_id)

    def delete(self, session_id: str) -> None:
        self.inner.delete(session_id)


class AsyncFailing:
    """:class:`Failing`'s async face (the advisor awaits it on acall/astream)."""

    def __init__(self, sync: Failing) -> None:
        self.sync = sync

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        await asyncio.sleep(0)
        return self.sync.append(session_id, events, expected_version=expected_version)

    async def events(
        self, session_id: str, *, after_seq: int = 0, last: int | None = None, types: Sequence[str] | None = None
    ) -> list[SessionEvent]:
        await asyncio.sleep(0)
        return self.sync.events(session_id, after_seq=after_seq, last=last, types=types)

    async def version(self, session_id: str) -> int:
        return self.sync.version(session_id)

    async def delete(self, session_id: str) -> None:
        self.sync.delete(session_id)


def face(mode: str, failing: Failing) -> Any:
    return failing if mode in ("call", "stream") else AsyncFailing(failing)


class Charge:
    def __init__(self) -> None:
        self.ran: list[int] = []

    @tool(description="Charge a card", requires_confirmation=True)
    def charge(self, amount: int) -> str:
        self.ran.append(amount)
        return "charged"


def retry(mode: str, error: SessionWriteError | ConcurrentTurnError) -> AppendResult:
    return error.retry() if mode in ("call", "stream") else asyncio.run(error.aretry())


def roles(repository: InMemorySessionRepository, conversation: str) -> list[str]:
    return [e.message().role for e in repository.events(conversation) if e.type == "message"]


@pytest.mark.parametrize("mode", MODES)
def test_one_dropped_connection_is_retried_in_place_and_the_turn_lands(mode: str) -> None:
    store = InMemorySessionRepository()
    failing = Failing(store, appends=1)
    client = ChatClient.builder(ScriptedChatModel(["hi"])).default_advisors(SessionMemoryAdvisor(face(mode, failing)))
    response, _ = run_spec(mode, client.build().prompt("hello").conversation("c"))
    assert response.text == "hi"
    assert failing.attempts == 2 and roles(store, "c") == ["user", "assistant"]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_write_carries_the_turn_and_its_retry_stores_it_once(mode: str) -> None:
    store = InMemorySessionRepository()
    failing = Failing(store, appends=2)
    client = ChatClient.builder(ScriptedChatModel(["hi"])).default_advisors(SessionMemoryAdvisor(face(mode, failing)))
    with pytest.raises(SessionWriteError) as raised:
        run_spec(mode, client.build().prompt("hello").conversation("c"))
    error = raised.value
    assert failing.attempts == 2, "one bounded retry in place, no more"
    assert error.conversation_id == "c" and "'c'" in str(error) and isinstance(error.__cause__, StoreDown)
    assert error.response.text == "hi", "the completed response rides on the error"
    assert [e.event_id.split(":")[1] for e in error.events] == ["0", "1"]
    assert store.events("c") == [], "nothing was written"
    assert retry(mode, error).appended == 2
    assert retry(mode, error) == AppendResult(2, 0, 2), "the ids are deterministic: a second retry is a no-op"
    assert roles(store, "c") == ["user", "assistant"]


@pytest.mark.parametrize("mode", MODES)
def test_a_refusal_that_is_not_a_dropped_connection_is_not_retried(mode: str) -> None:
    failing = Failing(InMemorySessionRepository(), appends=1, error=RuntimeError)
    client = ChatClient.builder(ScriptedChatModel(["hi"])).default_advisors(SessionMemoryAdvisor(face(mode, failing)))
    with pytest.raises(SessionWriteError) as raised:
        run_spec(mode, client.build().prompt("hello").conversation("c"))
    assert failing.attempts == 1 and isinstance(raised.value.__cause__, RuntimeError)
    assert retry(mode, raised.value).appended == 2


@pytest.mark.parametrize("mode", MODES)
def test_a_read_failure_is_a_memory_error_before_the_model_is_called(mode: str) -> None:
    failing = Failing(InMemorySessionRepository())
    failing.reads_fail = True
    model = ScriptedChatModel(["hi"])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(face(mode, failing))).build()
    with pytest.raises(SessionStoreError, match=r"Could not read conversation 'c' from (Async)?Failing") as raised:
        run_spec(mode, client.prompt("hello").conversation("c"))
    assert not isinstance(raised.value, SessionWriteError)
    assert raised.value.backend in ("Failing", "AsyncFailing") and model.prompts == []


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_whose_write_failed_is_stored_by_the_retry_and_the_tool_ran_once(mode: str) -> None:
    store = InMemorySessionRepository()
    failing = Failing(store)
    tools = Charge()
    model = ScriptedChatModel([AssistantMessage(tool_calls=[tool_call("charge", {"amount": 5}, id="w")]), "charged"])
    advisor = SessionMemoryAdvisor(face(mode, failing))
    client = ChatClient.builder(model).default_tools(tools).default_advisors(advisor).build()
    paused, _ = run_spec(mode, client.prompt("pay").conversation("c"))
    pending = awaiting_decision(paused)
    assert pending is not None
    failing.appends = 2
    allow = ToolCallDecisions.of(ToolCallDecision.allow("w"))
    with pytest.raises(SessionWriteError) as raised:
        run_spec(mode, client.prompt().conversation("c").resume(pending, allow))
    assert tools.ran == [5] and store.events("c") == []
    with pytest.raises(PendingStateReusedError):  # the state is spent: the error is the way back
        run_spec(mode, client.prompt().conversation("c").resume(pending, allow))
    assert tools.ran == [5], "the retried resume ran nothing"
    retry(mode, raised.value)
    assert roles(store, "c") == ["user", "assistant", "tool", "assistant"]
    assert {e.turn_id for e in store.events("c")} == {pending.turn_id}


@pytest.mark.parametrize("mode", MODES)
def test_raise_policy_hands_the_finished_turn_to_the_app(mode: str) -> None:
    store = InMemorySessionRepository()
    repository = store if mode in ("call", "stream") else AsyncInMemorySessionRepository(store)
    other = ChatClient.builder(ScriptedChatModel(["other"])).default_advisors(SessionMemoryAdvisor(store)).build()

    def answer(prompt: Any) -> str:
        other.prompt("meanwhile").conversation("c").call().content()  # another turn lands during this one
        return "mine"

    client = ChatClient.builder(ScriptedChatModel(answer))
    client = client.default_advisors(SessionMemoryAdvisor(repository, concurrency="raise"))
    with pytest.raises(ConcurrentTurnError) as raised:
        run_spec(mode, client.build().prompt("hello").conversation("c"))
    error = raised.value
    assert isinstance(error, VersionConflict) and (error.expected, error.current) == (0, 2)
    assert error.response.text == "mine" and len(error.events) == 2
    assert "error.retry()" in str(error)
    retry(mode, error)
    texts = [getattr(e.message(), "text", None) for e in store.events("c")]
    assert texts == ["meanwhile", "other", "hello", "mine"], "the app chose to keep its turn, after the other"
