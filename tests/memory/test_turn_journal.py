"""A memory-backed conversation without a pending store keeps its turn's tool rounds in a journal beside
its log, on every backend: a turn that stopped after tools ran is continued from another process (the
error object gone), nothing runs twice, a new turn is refused while one is unfinished, a crash in the
middle is never re-run silently, and of two concurrent continuations one wins (real servers)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, tool
from chatclient.durable import UNKNOWN_OUTCOME_MESSAGE, JournalEntry, TurnContinuation
from chatclient.errors import ServerError, TurnInProgressError
from chatclient.memory import SessionMemoryAdvisor
from chatclient.memory.journal import UnfinishedTurnError
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec

BACKENDS = ["memory", "sqlite", "redis", "postgres"]
WEATHER = AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="w1")])
CHARGE = AssistantMessage(None, tool_calls=[tool_call("charge", {"amount": 120}, id="c1")])
BOTH = AssistantMessage(
    None, tool_calls=[tool_call("charge", {"amount": 5}, id="c2"), tool_call("weather", {"city": "Rome"}, id="w2")]
)


class Killed(BaseException):
    """The process running the tools dies (nothing after it runs in this process)."""


class Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []
        self.kill = False

    @tool(idempotent=True)
    def weather(self, city: str) -> str:
        """The weather (a read: safe to run again)."""
        self.ran.append(city)
        return "sunny"

    @tool
    def charge(self, amount: int) -> str:
        """Charge the card."""
        self.ran.append(f"charge {amount}")
        if self.kill:
            raise Killed
        return f"charged {amount}"


_MEMORY: dict[str, Any] = {}


def _repository(backend: str, tmp_path: Path, prefix: str) -> Any:
    """A new repository object on the backend's storage: another process's view of it."""
    if backend == "memory":
        from chatclient.memory import InMemorySessionRepository

        return _MEMORY.setdefault(prefix, InMemorySessionRepository())
    if backend == "sqlite":
        from chatclient.memory.sqlite import SqliteSessionRepository

        return SqliteSessionRepository(tmp_path / "sessions.db", prefix=prefix)
    from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

    if backend == "redis":
        from chatclient.memory.redis import RedisSessionRepository

        return RedisSessionRepository(server_url(REDIS_URL), prefix=prefix.replace("_", ":"))
    from chatclient.memory.postgres import PostgresSessionRepository

    return PostgresSessionRepository(server_url(POSTGRES_URL), prefix=prefix)


def _close(*repositories: Any) -> None:
    for repository in repositories:
        close = getattr(repository, "close", None)
        if close is not None:
            close()


def _client(model: ScriptedChatModel, memory: SessionMemoryAdvisor) -> ChatClient:
    return ChatClient.builder(model).default_advisors(memory).build()


def _roles(repository: Any, conversation: str) -> list[str]:
    return [e.message().role for e in repository.events(conversation) if e.type == "message"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_a_turn_whose_error_is_gone_is_continued_from_its_journal_by_another_process(
    backend: str, mode: str, tmp_path: Path, prefix: str
) -> None:
    tools, first, second = Tools(), _repository(backend, tmp_path, prefix), _repository(backend, tmp_path, prefix)
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), "Charged 120."])
        with pytest.raises(ServerError):  # the web request failed; its error object is dropped
            run_spec(mode, _client(model, SessionMemoryAdvisor(first)).prompt("Charge").tools(tools).conversation("c1"))
        assert first.events("c1") == [], "nothing of a failed turn is in the log"
        memory = SessionMemoryAdvisor(second)  # another process
        continuation = memory.unfinished_turn("c1")
        assert continuation is not None and continuation.conversation_id == "c1"
        assert isinstance(continuation.progress.history[-1], ToolResponseMessage)
        client = _client(model, memory)
        response, _ = run_spec(mode, client.prompt().tools(tools).continue_turn(continuation))
        assert response.chat_response is not None and response.chat_response.result is not None
        assert response.chat_response.result.output.text == "Charged 120."
        assert tools.ran == ["charge 120"], "the tool ran once"
        assert _roles(second, "c1") == ["user", "assistant", "tool", "assistant"]
        assert memory.unfinished_turn("c1") is None, "the journal is cleared once the turn is stored"
        assert model.prompts[-1].messages[-1].role == "tool", "the model read the recorded result"
    finally:
        _close(first, second)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_a_new_turn_is_refused_while_one_is_unfinished_until_it_is_abandoned(
    backend: str, mode: str, tmp_path: Path, prefix: str
) -> None:
    tools, repository = Tools(), _repository(backend, tmp_path, prefix)
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), WEATHER, "Sunny."])
        memory = SessionMemoryAdvisor(repository)
        client = _client(model, memory)
        with pytest.raises(ServerError):
            client.prompt("Charge").tools(tools).conversation("c2").call().content()
        rounds = len(model.prompts)
        with pytest.raises(UnfinishedTurnError) as refused:
            run_spec(mode, client.prompt("Weather?").tools(tools).conversation("c2"))
        assert tools.ran == ["charge 120"] and len(model.prompts) == rounds, "refused before its first round"
        assert "continue_turn" in str(refused.value) and "abandon_turn" in str(refused.value)
        unfinished = memory.unfinished_turn("c2")
        assert unfinished is not None and refused.value.turn_id == unfinished.progress.turn_id
        memory.abandon_turn("c2", refused.value.turn_id)
        assert memory.unfinished_turn("c2") is None
        assert client.prompt("Weather?").tools(tools).conversation("c2").call().content() == "Sunny."
        assert _roles(repository, "c2") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(repository)


def test_allow_lets_new_turns_go_on_beside_an_unfinished_one(tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), WEATHER, "Sunny."])
        memory = SessionMemoryAdvisor(repository, unfinished_turns="allow")
        client = _client(model, memory)
        with pytest.raises(ServerError):
            client.prompt("Charge").tools(tools).conversation("c3").call().content()
        assert client.prompt("Weather?").tools(tools).conversation("c3").call().content() == "Sunny."
        assert memory.unfinished_turn("c3") is not None, "the unfinished turn is still there to continue"
    finally:
        _close(repository)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_crash_in_the_middle_is_never_re_run_silently(backend: str, tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository(backend, tmp_path, prefix)
    try:
        model = ScriptedChatModel([BOTH, "Charged 5 (unknown), sunny in Rome."])
        memory = SessionMemoryAdvisor(repository)
        client = _client(model, memory)
        tools.kill = True
        with pytest.raises(Killed):
            client.prompt("Charge 5 and the weather").tools(tools).conversation("c4").call().content()
        tools.kill, ran_before = False, list(tools.ran)
        assert "charge 5" in ran_before
        with pytest.raises(TurnInProgressError, match="after_crash=True"):
            memory.unfinished_turn("c4")
        continuation = memory.unfinished_turn("c4", after_crash=True)
        assert continuation is not None and set(continuation.started) == {"c2", "w2"}
        answer = client.prompt().tools(tools).continue_turn(continuation).call().content()
        assert answer == "Charged 5 (unknown), sunny in Rome."
        assert tools.ran == [*ran_before, "Rome"], "the charge did not run again; the idempotent read did"
        sent = model.prompts[-1].messages
        results = {r.id: r.response_data for m in sent if isinstance(m, ToolResponseMessage) for r in m.responses}
        assert results == {"c2": UNKNOWN_OUTCOME_MESSAGE, "w2": "sunny"}
        assert _roles(repository, "c4") == ["user", "assistant", "tool", "assistant"]
        assert memory.unfinished_turn("c4") is None
    finally:
        _close(repository)


def test_a_process_killed_in_the_round_after_its_tools_is_taken_over_only_after_a_crash(
    tmp_path: Path, prefix: str
) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        killed = [True]

        def reply(prompt: Any) -> Any:
            if prompt.messages[-1].role != "tool":
                return CHARGE
            if killed.pop() if killed else False:
                raise Killed  # the results were recorded; the process dies sending the next round
            return "Charged 120."

        memory = SessionMemoryAdvisor(repository)
        client = _client(ScriptedChatModel(reply), memory)
        with pytest.raises(Killed):
            client.prompt("Charge").tools(tools).conversation("c10").call().content()
        with pytest.raises(TurnInProgressError, match="after_crash=True"):  # it may still be sending that round
            memory.unfinished_turn("c10")
        continuation = memory.unfinished_turn("c10", after_crash=True)
        assert continuation is not None and continuation.started == ()
        assert client.prompt().tools(tools).continue_turn(continuation).call().content() == "Charged 120."
        assert tools.ran == ["charge 120"]
        assert _roles(repository, "c10") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(repository)


class RacingJournals:
    """Both continuations try their claim together: the race the compare-and-set settles."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.barrier = inner, threading.Barrier(2)
        self.claims = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_turn_journal(self, session_id: str, turn_id: str, version: int, entry: str) -> bool:
        self.claims += 1
        if self.claims <= 2:
            self.barrier.wait(timeout=20)
        return bool(self.inner.write_turn_journal(session_id, turn_id, version, entry))


@pytest.mark.parametrize("backend", BACKENDS)
def test_of_two_concurrent_continuations_one_wins(backend: str, tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository(backend, tmp_path, prefix)
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), "Charged.", "Charged."])
        with pytest.raises(ServerError):
            spec = _client(model, SessionMemoryAdvisor(repository)).prompt("Charge").tools(tools)
            spec.conversation("c5").call().content()
        racing = RacingJournals(repository)
        memory = SessionMemoryAdvisor(racing)
        continuation = memory.unfinished_turn("c5")
        assert continuation is not None
        client, outcomes = _client(model, memory), list[object]()
        rounds_before = len(model.prompts)

        def go() -> None:
            try:
                outcomes.append(client.prompt().tools(tools).continue_turn(continuation).call().content())
            except Exception as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=go) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(type(o).__name__ for o in outcomes) == ["TurnInProgressError", "str"]
        assert len(model.prompts) == rounds_before + 1, "the loser stopped at its claim, before the model"
        assert tools.ran == ["charge 120"]
        assert _roles(repository, "c5") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(repository)


def test_a_continuation_travels_as_json_with_its_journal_version(tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), "Charged."])
        client = _client(model, SessionMemoryAdvisor(repository))
        with pytest.raises(ServerError) as failed:
            client.prompt("Charge").tools(tools).conversation("c6").call().content()
        carried = TurnContinuation.from_json(failed.value.continuation.to_json())
        assert carried.journal_version == failed.value.continuation.journal_version is not None
        assert client.prompt().tools(tools).continue_turn(carried).call().content() == "Charged."
        assert tools.ran == ["charge 120"]
    finally:
        _close(repository)


def test_a_plain_turn_and_a_tool_turn_without_tool_rounds_write_no_journal(tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    writes: list[str] = []
    original = repository.write_turn_journal

    def counted(*args: Any) -> bool:
        writes.append(args[1])
        return bool(original(*args))

    repository.write_turn_journal = counted
    try:
        client = _client(ScriptedChatModel(["Hi.", "Hello."]), SessionMemoryAdvisor(repository))
        client.prompt("Hi").conversation("c7").call().content()
        client.prompt("Hello").tools(tools).conversation("c7").call().content()
        assert writes == []
        assert _roles(repository, "c7") == ["user", "assistant", "user", "assistant"]
    finally:
        _close(repository)


@pytest.mark.parametrize("mode", ["acall", "astream"])
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_an_async_repository_keeps_the_journal_too(backend: str, mode: str, tmp_path: Path, prefix: str) -> None:
    from chatclient.memory import AsyncInMemorySessionRepository, AsyncSqliteSessionRepository

    sync = _repository(backend, tmp_path, prefix)
    repository: Any = (
        AsyncInMemorySessionRepository(sync)
        if backend == "memory"
        else AsyncSqliteSessionRepository(tmp_path / "sessions.db", prefix=prefix)
    )
    tools = Tools()
    try:
        model = ScriptedChatModel([CHARGE, ServerError("503"), "Charged."])
        memory = SessionMemoryAdvisor(repository)
        client = _client(model, memory)
        with pytest.raises(ServerError):
            run_spec(mode, client.prompt("Charge").tools(tools).conversation("c8"))
        continuation = asyncio.run(memory.aunfinished_turn("c8"))
        assert continuation is not None
        run_spec(mode, client.prompt().tools(tools).continue_turn(continuation))
        assert tools.ran == ["charge 120"]
        assert asyncio.run(memory.aunfinished_turn("c8")) is None
        assert _roles(sync, "c8") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(sync, getattr(repository, "sync", None))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_journal_store_moves_by_compare_and_set(backend: str, tmp_path: Path, prefix: str) -> None:
    repository = _repository(backend, tmp_path, prefix)
    entry = JournalEntry(status="recorded", decisions="", by="a").dump()
    other = JournalEntry(status="recorded", decisions="", by="b").dump()
    try:
        assert repository.turn_journals("c9") == []
        assert repository.write_turn_journal("c9", "t1", 0, entry)
        assert repository.write_turn_journal("c9", "t1", 0, entry), "a resend of the same write has landed"
        assert not repository.write_turn_journal("c9", "t1", 0, other), "another writer at a stale version"
        assert repository.write_turn_journal("c9", "t1", 1, other)
        assert not repository.write_turn_journal("c9", "t1", 1, entry)
        assert repository.turn_journals("c9") == [("t1", 2, other)]
        assert repository.events("c9") == [] and repository.version("c9") == 0, "nothing in the log"
        repository.clear_turn_journal("c9", "t1")
        repository.clear_turn_journal("c9", "t1")  # idempotent
        assert repository.turn_journals("c9") == []
        assert repository.write_turn_journal("c9", "t2", 0, entry)
        repository.delete("c9")
        assert repository.turn_journals("c9") == [], "a deleted session takes its journals with it"
    finally:
        _close(repository)


def test_spring_s_chat_memory_advisor_keeps_the_journal_too(tmp_path: Path, prefix: str) -> None:
    from chatclient.memory import MessageChatMemoryAdvisor, MessageWindowChatMemory

    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        chat_memory = MessageWindowChatMemory(repository)
        memory = MessageChatMemoryAdvisor(chat_memory)
        client = _client(ScriptedChatModel([CHARGE, ServerError("503"), "Charged."]), memory)
        with pytest.raises(ServerError):
            client.prompt("Charge").tools(tools).conversation("c11").call().content()
        continuation = memory.unfinished_turn("c11")
        assert continuation is not None
        assert client.prompt().tools(tools).continue_turn(continuation).call().content() == "Charged."
        assert [m.role for m in chat_memory.get("c11")] == ["user", "assistant", "tool", "assistant"]
        assert tools.ran == ["charge 120"]
    finally:
        _close(repository)


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_turn_leaves_no_journal_and_its_resume_completes_it(mode: str, tmp_path: Path, prefix: str) -> None:
    from chatclient import ToolCallDecision, ToolCallDecisions

    class Gated:
        def __init__(self) -> None:
            self.ran: list[str] = []

        @tool(requires_confirmation=True)
        def charge(self, amount: int) -> str:
            """Charge the card."""
            self.ran.append(f"charge {amount}")
            return f"charged {amount}"

    gated, repository = Gated(), _repository("sqlite", tmp_path, prefix)
    try:
        memory = SessionMemoryAdvisor(repository)
        client = _client(ScriptedChatModel([CHARGE, "Charged."]), memory)
        paused, _ = run_spec(mode, client.prompt("Charge").tools(gated).conversation("c12"))
        pending = paused.context["chatclient.tool_loop.pending"]
        assert repository.turn_journals("c12") == [] and memory.unfinished_turn("c12") is None
        allow = ToolCallDecisions.of(ToolCallDecision.allow("c1"))
        run_spec(mode, client.prompt().tools(gated).resume(pending, allow))
        assert gated.ran == ["charge 120"]
        assert _roles(repository, "c12") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(repository)


def test_two_live_tool_turns_on_one_conversation_do_not_block_each_other(tmp_path: Path, prefix: str) -> None:
    repository, meet = _repository("sqlite", tmp_path, prefix), threading.Barrier(2)

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        meet.wait(timeout=20)  # both turns are in their tool round at once: each journal is held
        return key

    def reply(prompt: Any) -> Any:
        last = prompt.messages[-1]
        if last.role == "tool":
            return f"found {last.responses[0].response_data}"
        return AssistantMessage(None, tool_calls=[tool_call("lookup", {"key": last.text}, id=f"l-{last.text}")])

    try:
        client = _client(ScriptedChatModel(reply), SessionMemoryAdvisor(repository))
        answers: list[object] = []

        def turn(key: str) -> None:
            try:
                answers.append(client.prompt(key).tools(lookup).conversation("c13").call().content())
            except Exception as exc:
                answers.append(exc)

        threads = [threading.Thread(target=turn, args=(key,)) for key in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(map(str, answers)) == ["found a", "found b"]
        assert repository.turn_journals("c13") == []
    finally:
        _close(repository)


@pytest.mark.parametrize("concurrency", ["append", "serialize"])
def test_a_crashed_turn_blocks_new_turns_only_where_no_live_runner_can_hold_it(
    concurrency: str, tmp_path: Path, prefix: str
) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        memory = SessionMemoryAdvisor(repository, concurrency=concurrency)  # type: ignore[arg-type]
        script: list[Any] = [CHARGE, "Charge: outcome unknown."]
        if concurrency == "append":
            script[1:1] = [WEATHER, "Sunny."]  # the new turn's rounds come before the continuation's
        client = _client(ScriptedChatModel(script), memory)
        tools.kill = True
        with pytest.raises(Killed):
            client.prompt("Charge").tools(tools).conversation("c14").call().content()
        tools.kill = False
        if concurrency == "serialize":  # the lease rules out a live runner: the held journal is a dead one's
            with pytest.raises(UnfinishedTurnError, match="after_crash=True"):
                client.prompt("Weather?").tools(tools).conversation("c14").call().content()
            taken = memory.unfinished_turn("c14", after_crash=True)
            assert taken is not None
            assert client.prompt().tools(tools).continue_turn(taken).call().content() == "Charge: outcome unknown."
            assert tools.ran == ["charge 120"]
            return
        # append: the held journal may be a live turn's; the new turn goes on, the crashed one stays continuable
        assert client.prompt("Weather?").tools(tools).conversation("c14").call().content() == "Sunny."
        continuation = memory.unfinished_turn("c14", after_crash=True)
        assert continuation is not None and continuation.started == ("c1",)
        assert client.prompt().tools(tools).continue_turn(continuation).call().content() == "Charge: outcome unknown."
        assert tools.ran == ["charge 120", "Oslo"]
    finally:
        _close(repository)


def test_a_continuation_without_tools_still_claims_and_clears_the_journal(tmp_path: Path, prefix: str) -> None:
    tools, repository = Tools(), _repository("sqlite", tmp_path, prefix)
    try:
        memory = SessionMemoryAdvisor(repository)
        client = _client(ScriptedChatModel([CHARGE, ServerError("503"), "Charged."]), memory)
        with pytest.raises(ServerError):
            client.prompt("Charge").tools(tools).conversation("c15").call().content()
        continuation = memory.unfinished_turn("c15")
        assert continuation is not None
        assert client.prompt().continue_turn(continuation).call().content() == "Charged."
        assert memory.unfinished_turn("c15") is None
        assert _roles(repository, "c15") == ["user", "assistant", "tool", "assistant"]
    finally:
        _close(repository)
