"""The decode cache serves one copy of each stored message to every reader in the process: no
reader (the application, a later advisor) can change what another turn reads, and the history is
always what the log stores."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, UserMessage
from chatclient.memory import InMemorySessionRepository, MessageWindowChatMemory, SessionMemoryAdvisor, log
from chatclient.memory._frozen import frozen
from chatclient.messages import JsonPart, Message, ToolResponseMessage
from chatclient.testing import ScriptedChatModel
from chatclient.testing.memory import every_message_kind


@pytest.fixture(autouse=True)
def _empty_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log, "_DECODED", {})


def _stored(repository: InMemorySessionRepository, conversation: str) -> list[Message]:
    """The log's messages decoded afresh (not through the cache)."""
    return [log._adapter().validate_json(e.payload) for e in repository.events(conversation) if e.type == "message"]


def _client(repository: InMemorySessionRepository, model: ScriptedChatModel) -> ChatClient:
    return ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=40)).build()


def test_what_the_application_does_to_its_own_messages_never_reaches_the_history() -> None:
    repository = InMemorySessionRepository()
    model = ScriptedChatModel([AssistantMessage("Paris.", metadata={"id": "r1"}), "Yes."])
    client = _client(repository, model)
    question = UserMessage("Capital of France?", metadata={"tags": ["geo"]})
    answer = client.prompt().messages(question).conversation("c").call().chat_response()
    assert answer is not None and answer.result is not None
    mine: Any = answer.result.output
    mine.metadata["id"] = "changed by the app"  # the app's own objects stay the app's to change
    tags: Any = question.metadata["tags"]
    tags.append("changed")
    client.prompt().user("Sure?").conversation("c").call().content()
    history = model.prompts[-1].messages[:2]
    assert list(history) == _stored(repository, "c")[:2]
    assert history[0].metadata == {"tags": ["geo"]} and history[1].metadata == {"id": "r1"}


def test_a_message_read_from_the_history_is_read_only_all_through() -> None:
    repository = InMemorySessionRepository()
    memory = MessageWindowChatMemory(repository, max_messages=20)
    memory.add("c", every_message_kind(), turn_id="t1")
    log._DECODED.clear()  # decoded from the payloads, as another process's turns are
    assert memory.get("c") == memory.get("c") == every_message_kind()
    first: Any = memory.get("c")
    tool: Any = next(m for m in first if isinstance(m, ToolResponseMessage))
    part: Any = next(p for p in tool.responses[0].parts if isinstance(p, JsonPart))
    attempts: list[Any] = [
        lambda: first[1].metadata.__setitem__("id", "x"),
        lambda: first[1].metadata.update(id="x"),
        lambda: first[0].metadata["cache_control"].__setitem__("type", "x"),
        lambda: first[2].metadata["anthropic_thinking_blocks"].append({}),
        lambda: first[2].metadata["anthropic_thinking_blocks"].__iadd__([{}]),
        lambda: first[2].metadata["anthropic_thinking_blocks"][0].__setitem__("signature", ""),
        lambda: tool.responses[0].metadata.pop("decision"),
        lambda: tool.responses[0].result_metadata.clear(),
        lambda: part.value.__setitem__("t", 0),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError, match="read-only"):
            attempt()
    assert memory.get("c") == _stored(repository, "c") == every_message_kind()


def test_a_later_advisor_cannot_change_the_next_turns_history() -> None:
    from chatclient.advisor import AdvisorOrder, CallNext, ChatClientRequest, ChatClientResponse

    class Tamperer:
        name, order = "tamperer", AdvisorOrder.MEMORY + 1
        refused = 0

        def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
            for message in request.prompt.messages[:-1]:
                try:
                    message.metadata["tampered"] = True
                except TypeError:
                    Tamperer.refused += 1
            return next_(request)

    repository = InMemorySessionRepository()
    model = ScriptedChatModel(["One.", "Two.", "Three."])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository), Tamperer()).build()
    for text in ("a?", "b?", "c?"):
        client.prompt().user(text).conversation("c").call().content()
    assert Tamperer.refused == 2 + 4
    assert all("tampered" not in m.metadata for m in model.prompts[-1].messages)


def test_a_read_only_twin_is_the_message_for_every_other_purpose() -> None:
    for message in every_message_kind():
        twin = frozen(message)
        assert twin == message and message == twin and type(twin) is type(message)
        assert log.encode_message(twin) == log.encode_message(message) == message.model_dump_json()
        assert twin.model_dump() == message.model_dump()
        assert pickle.loads(pickle.dumps(twin)) == message
        mutable = copy.deepcopy(twin)
        mutable.metadata["mine"] = 1  # a deep copy is the reader's own
        assert "mine" not in twin.metadata
        assert type(twin).model_validate(twin.model_dump()) == message
    original = UserMessage("hi", metadata={"k": [1]})
    frozen(original)
    listed: Any = original.metadata["k"]
    listed.append(2)  # twinning never froze the original
    assert original.metadata == {"k": [1, 2]}


def test_the_in_memory_store_hands_out_no_object_a_reader_can_change_it_through() -> None:
    repository = InMemorySessionRepository()
    repository.append("c", log.turn_events("t1", [UserMessage("one")]))
    events = repository.events("c")
    events.clear()  # the caller's list, not the log
    assert [e.event_id for e in repository.events("c")] == ["t1:0"]
    with pytest.raises(AttributeError):
        repository.events("c")[0].payload = "{}"  # type: ignore[misc]
