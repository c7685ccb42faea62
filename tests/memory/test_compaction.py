"""Compaction through SessionMemoryAdvisor: a boundary appended after the turn that crossed the
trigger, the next view built on it (a recursive summary written by a ChatClient), in all four modes,
and once per version when turns race."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from chatclient import AssistantMessage, ChatClient, ConfigurationError, UserMessage
from chatclient.memory import (
    AppendResult,
    AsyncInMemorySessionRepository,
    InMemorySessionRepository,
    NewEvent,
    SessionMemoryAdvisor,
)
from chatclient.memory.compaction import (
    Compaction,
    RecursiveSummary,
    SessionView,
    TokenBudget,
    TokenCount,
    TurnCount,
    TurnWindow,
    any_of,
    view_of,
)
from chatclient.memory.tokens import default_token_counter, estimate_tokens, message_text, tiktoken_counter
from chatclient.prompt import Prompt
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec


def texts(messages: Sequence[object]) -> list[str]:
    return [getattr(m, "text", "") or "" for m in messages]


def summariser() -> tuple[ChatClient, list[Prompt]]:
    model = ScriptedChatModel(lambda prompt: f"summary #{len(model.prompts)}")
    return ChatClient.create(model), model.prompts


@pytest.mark.parametrize("mode", MODES)
def test_a_recursive_summary_replaces_old_turns_and_the_next_one_builds_on_it(mode: str) -> None:
    repository = InMemorySessionRepository()
    face = repository if mode in ("call", "stream") else AsyncInMemorySessionRepository(repository)
    summary_client, summary_prompts = summariser()
    compaction = Compaction(TurnCount(2), RecursiveSummary(summary_client, keep_turns=1))
    model = ScriptedChatModel(lambda prompt: f"answer {len(prompt.messages)}")
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(face, compaction=compaction)).build()

    for n in range(3):
        run_spec(mode, client.prompt(f"question {n}").conversation("c1"))
    log = repository.events("c1")
    assert [e.type for e in log] == ["message"] * 6 + ["compaction"], "the turn that crossed the trigger compacted"
    assert len(summary_prompts) == 1
    request = texts(summary_prompts[0].messages)[-1]
    assert "question 0" in request and "question 1" in request and "question 2" not in request

    run_spec(mode, client.prompt("question 3").conversation("c1"))
    sent = model.prompts[-1].messages
    assert texts(sent) == ["Summarise our conversation so far.", "summary #1", "question 2", "answer 5", "question 3"]

    run_spec(mode, client.prompt("question 4").conversation("c1"))  # 2 turns after the summary: again
    assert len(summary_prompts) == 2
    assert "Previous summary:\nsummary #1" in texts(summary_prompts[1].messages)[-1]
    assert [e.type for e in repository.events("c1")].count("compaction") == 2
    assert len([e for e in repository.events("c1") if e.type == "message"]) == 10, "the log keeps every turn"
    run_spec(mode, client.prompt("question 5").conversation("c1"))
    assert texts(model.prompts[-1].messages)[:2] == ["Summarise our conversation so far.", "summary #2"]


def test_a_blank_or_failing_summary_skips_the_pass_and_keeps_the_turn() -> None:
    repository = InMemorySessionRepository()
    replies: list[object] = ["   ", RuntimeError("summariser down")]
    summary = ChatClient.create(ScriptedChatModel(replies))  # type: ignore[arg-type]
    compaction = Compaction(TurnCount(1), RecursiveSummary(summary, keep_turns=1))
    client = (
        ChatClient.builder(ScriptedChatModel(["a", "b", "c"]))
        .default_advisors(SessionMemoryAdvisor(repository, compaction=compaction))
        .build()
    )
    for text in ("one", "two", "three"):
        assert client.prompt(text).conversation("c1").call().content() in ("a", "b", "c")
    assert [e.type for e in repository.events("c1")] == ["message"] * 6, "no boundary, no lost turn"


def test_a_failing_token_counter_never_fails_the_stored_turn() -> None:
    def broken(text: str) -> int:
        raise OSError("the encoding could not be loaded")

    repository = InMemorySessionRepository()
    compaction = Compaction(TokenCount(1), TurnWindow(1), broken)
    client = (
        ChatClient.builder(ScriptedChatModel(["a", "b"]))
        .default_advisors(SessionMemoryAdvisor(repository, compaction=compaction))
        .build()
    )
    assert [client.prompt(t).conversation("c1").call().content() for t in ("one", "two")] == ["a", "b"]
    assert [e.type for e in repository.events("c1")] == ["message"] * 4


def test_a_window_strategy_needs_no_model_and_the_token_trigger_counts_tool_text() -> None:
    repository = InMemorySessionRepository()
    model = ScriptedChatModel(lambda prompt: "x" * 40)
    compaction = Compaction(any_of(TurnCount(50), TokenCount(40, estimate_tokens)), TurnWindow(1), estimate_tokens)
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, compaction=compaction)).build()
    client.prompt("first").conversation("c1").call().content()
    assert [e.type for e in repository.events("c1")] == ["message"] * 2, "under both thresholds"
    client.prompt("second").conversation("c1").call().content()
    assert repository.events("c1")[-1].type == "compaction", "20 tokens a turn: fired at 40"
    client.prompt("third").conversation("c1").call().content()
    assert texts(model.prompts[-1].messages) == ["second", "x" * 40, "third"]


class RaceAfterAppend(InMemorySessionRepository):
    """Two turns read the same base version (a barrier after the first two view reads), and both
    appends land before either compacts (a barrier after each turn's append)."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(2)
        self.reads = 0

    def events(self, session_id: str, **kwargs: object) -> list:  # type: ignore[type-arg]
        events = super().events(session_id, **kwargs)  # type: ignore[arg-type]
        if kwargs.get("types") is None:
            with self._lock:
                self.reads += 1
                first_two = self.reads <= 2
            if first_two:
                self.barrier.wait(timeout=10)
        return events

    def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        result = super().append(session_id, events, expected_version=expected_version)
        if events and events[0].type == "message":
            self.barrier.wait(timeout=10)
        return result


def test_two_racing_turns_compact_once() -> None:
    repository = RaceAfterAppend()
    for n in range(3):
        InMemorySessionRepository.append(repository, "c1", [NewEvent(f"p{n}:0", f"p{n}", _user(f"pre {n}"))])
    compaction = Compaction(TurnCount(2), TurnWindow(1))
    client = (
        ChatClient.builder(ScriptedChatModel(lambda prompt: "ok"))
        .default_advisors(SessionMemoryAdvisor(repository, compaction=compaction))
        .build()
    )
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda text: client.prompt(text).conversation("c1").call().content(), ["a", "b"]))
    log = repository.events("c1")
    assert [e.type for e in log].count("compaction") == 1, "the stale one conflicts, the latest one compacts"
    assert log[-1].type == "compaction" and log[-1].seq == 8


def _user(text: str) -> str:
    from chatclient.memory.log import encode_message

    return encode_message(UserMessage(text))


def test_configuration_is_checked() -> None:
    with pytest.raises(ConfigurationError):
        TurnCount(0)
    with pytest.raises(ConfigurationError):
        TokenBudget(-1)
    with pytest.raises(ConfigurationError):
        any_of()
    with pytest.raises(ConfigurationError):
        Compaction(TurnCount(1), "everything")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        SessionMemoryAdvisor(InMemorySessionRepository(), compaction=TurnCount(3))  # type: ignore[arg-type]


def test_token_counting_is_pluggable_and_tiktoken_is_optional() -> None:
    import importlib.util

    assert estimate_tokens("12345678") == 2
    counter = default_token_counter()
    if importlib.util.find_spec("tiktoken") is None:
        assert counter is estimate_tokens
        with pytest.raises(ConfigurationError, match=r"chatclient\[tokens\]"):
            tiktoken_counter()("hello")
    assert message_text(AssistantMessage("Let me look.")) == "Let me look."
    assert view_of([]) == SessionView((), ())
