"""SessionMemoryAdvisor in all four modes: history in, the whole turn out, once, across a pause."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ConfigurationError,
    ToolCallDecision,
    ToolCallDecisions,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from chatclient.memory import (
    AsyncInMemorySessionRepository,
    InMemorySessionRepository,
    MessageChatMemoryAdvisor,
    MessageWindowChatMemory,
    SessionMemoryAdvisor,
    SessionRepository,
    VersionConflict,
)
from chatclient.memory.sqlite import SqliteSessionRepository
from chatclient.messages import Message
from chatclient.prompt import Prompt
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import awaiting_decision


class Tools:
    def __init__(self) -> None:
        self.booked = 0

    @tool(description="Get the weather of a city")
    def weather(self, city: str) -> str:
        return f"Sunny in {city}"

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str) -> str:
        self.booked += 1
        return f"Booked {name}"


def roles(messages: object) -> list[str]:
    return [m.role for m in messages]  # type: ignore[attr-defined]


def stored(repository: SessionRepository, conversation: str) -> list[object]:
    return [e.message() for e in repository.events(conversation)]


@pytest.mark.parametrize("mode", MODES)
def test_history_goes_in_and_the_whole_turn_is_stored_once(mode: str) -> None:
    repository = InMemorySessionRepository()
    face = repository if mode in ("call", "stream") else AsyncInMemorySessionRepository(repository)
    round_one = AssistantMessage(tool_calls=[tool_call("weather", {"city": "Oslo"})])
    model = ScriptedChatModel([round_one, "Sunny in Oslo.", "You asked about Oslo."])
    builder = ChatClient.builder(model).default_system("Be brief.").default_tools(Tools())
    client = builder.default_advisors(SessionMemoryAdvisor(face)).build()

    first, _ = run_spec(mode, client.prompt("Weather in Oslo?").conversation("c1"))
    assert first.text == "Sunny in Oslo."
    log = stored(repository, "c1")
    assert roles(log) == ["user", "assistant", "tool", "assistant"], "the user message, the round, the answer"
    assert [e.event_id.split(":")[1] for e in repository.events("c1")] == ["0", "1", "2", "3"]

    second, _ = run_spec(mode, client.prompt("What did I ask?").conversation("c1"))
    assert second.text == "You asked about Oslo."
    sent = model.prompts[-1].messages
    assert roles(sent) == ["system", "user", "assistant", "tool", "assistant", "user"], "system first, then history"
    assert roles(stored(repository, "c1")) == ["user", "assistant", "tool", "assistant", "user", "assistant"]


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_turn_is_stored_only_when_resumed_and_only_once(mode: str) -> None:
    repository = InMemorySessionRepository()
    tools = Tools()
    model = ScriptedChatModel([AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")]), "Booked."])
    client = ChatClient.builder(model).default_tools(tools).default_advisors(SessionMemoryAdvisor(repository)).build()

    paused, _ = run_spec(mode, client.prompt("Book for Ada").conversation("c1"))
    pending = awaiting_decision(paused)
    assert pending is not None and paused.is_paused
    assert repository.events("c1") == [], "nothing is stored while a person decides"

    resume = client.prompt().conversation("c1").resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1")))
    resumed, _ = run_spec(mode, resume)
    assert resumed.text == "Booked." and tools.booked == 1
    log = repository.events("c1")
    assert roles([e.message() for e in log]) == ["user", "assistant", "tool", "assistant"]
    assert {e.turn_id for e in log} == {pending.turn_id}, "the resumed turn keeps its id"
    assert isinstance(log[0].message(), UserMessage) and isinstance(log[2].message(), ToolResponseMessage)
    assert model.prompts[-1].messages[0] == UserMessage("Book for Ada"), "nothing prepended on resume"


def test_a_conversation_id_is_required() -> None:
    client = (
        ChatClient.builder(ScriptedChatModel(["Hi"]))
        .default_advisors(SessionMemoryAdvisor(InMemorySessionRepository()))
        .build()
    )
    with pytest.raises(ConfigurationError, match=r"conversation\(id\)"):
        client.prompt("Hello").call().content()
    with pytest.raises(ConfigurationError, match="non-empty"):
        client.prompt("Hello").conversation("")


def test_the_window_never_starts_inside_a_turn(tmp_path: Path) -> None:
    repository = SqliteSessionRepository(tmp_path / "s.db")
    model = ScriptedChatModel(
        lambda prompt: (
            "done"
            if isinstance(prompt.messages[-1], ToolResponseMessage)
            else AssistantMessage(tool_calls=[tool_call("weather", {"city": "Oslo"})])
        )
    )
    client = (
        ChatClient.builder(model)
        .default_tools(Tools())
        .default_advisors(SessionMemoryAdvisor(repository, window=6))
        .build()
    )
    for n in range(3):
        client.prompt(f"turn {n}").conversation("c1").call().content()
    assert repository.version("c1") == 12
    sent: Prompt = model.prompts[-2]  # the first model call of the third turn
    # Before it the last 6 events are t0:2, t0:3, t1:0 … t1:3: the view starts at t1:0, a user message.
    assert roles(sent.messages) == ["user", "assistant", "tool", "assistant", "user"]
    assert (sent.messages[0], sent.messages[-1]) == (UserMessage("turn 1"), UserMessage("turn 2"))


def test_the_raise_policy_refuses_a_turn_based_on_a_moved_log() -> None:
    repository = InMemorySessionRepository()
    memory = SessionMemoryAdvisor(repository, concurrency="raise")

    def answer(prompt: Prompt) -> str:
        if prompt.messages[-1] == UserMessage("first"):  # another turn lands while this one runs
            ChatClient.builder(ScriptedChatModel(["other"])).default_advisors(
                SessionMemoryAdvisor(repository)
            ).build().prompt("other").conversation("c1").call().content()
        return "ok"

    client = ChatClient.builder(ScriptedChatModel(answer)).default_advisors(memory).build()
    with pytest.raises(VersionConflict):
        client.prompt("first").conversation("c1").call().content()
    assert [e.message() for e in repository.events("c1")] == [UserMessage("other"), AssistantMessage("other")]


def test_message_window_chat_memory_windows_when_reading_and_keeps_everything() -> None:
    memory = MessageWindowChatMemory(max_messages=3)
    call = tool_call("weather", {"city": "Oslo"}, id="w1")
    turn: list[Message] = [
        UserMessage("Weather?"),
        AssistantMessage(tool_calls=[call]),
        ToolResponseMessage([ToolResponse(id="w1", name="weather", response_data="Sunny")]),
        AssistantMessage("Sunny."),
    ]
    memory.add("c1", turn, turn_id="t1")
    memory.add("c1", turn, turn_id="t1")  # a retry adds nothing
    assert memory.get("c1") == [], "the last 3 messages start inside the turn: the cut moves forward"
    memory.add("c1", [UserMessage("Thanks"), AssistantMessage("You're welcome")], turn_id="t2")
    assert memory.get("c1") == [UserMessage("Thanks"), AssistantMessage("You're welcome")]
    assert memory.repository.version("c1") == 6, "the window deletes nothing"
    memory.clear("c1")
    assert memory.get("c1") == []
    with pytest.raises(ConfigurationError):
        MessageWindowChatMemory(max_messages=0)


def test_message_chat_memory_advisor_uses_the_memory_window() -> None:
    memory = MessageWindowChatMemory(max_messages=2)
    model = ScriptedChatModel(["one", "two", "three"])
    client = ChatClient.builder(model).default_advisors(MessageChatMemoryAdvisor(memory)).build()
    for text in ("a", "b", "c"):
        client.prompt(text).conversation("c1").call().content()
    assert model.prompts[-1].messages == (UserMessage("b"), AssistantMessage("two"), UserMessage("c"))
