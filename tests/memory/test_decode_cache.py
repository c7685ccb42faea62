"""The per-turn work of memory stays small: a stored message is decoded once per process (never
again for each turn's view), the cache is keyed by the payload text itself, and the usage payload
keeps its exact stored form (a replayed append compares payloads byte for byte)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, UserMessage
from chatclient.memory import InMemorySessionRepository, SessionMemoryAdvisor, log
from chatclient.memory.usage import usage_event
from chatclient.messages import Message
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation, Usage
from chatclient.testing import ScriptedChatModel


class _CountingAdapter:
    """Wraps the message TypeAdapter and counts what it decodes."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.decoded = inner, 0

    def validate_json(self, payload: str) -> Any:
        self.decoded += 1
        return self.inner.validate_json(payload)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> _CountingAdapter:
    counting = _CountingAdapter(log._adapter())
    monkeypatch.setattr(log, "_adapter", lambda: counting)
    monkeypatch.setattr(log, "_DECODED", {})
    return counting


def test_a_turn_stored_in_this_process_is_never_decoded_again(decodes: _CountingAdapter) -> None:
    repository = InMemorySessionRepository()
    model = ScriptedChatModel([f"Answer {n}." for n in range(6)])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=40)).build()
    for n in range(6):
        client.prompt().user(f"Question {n}?").conversation("c").call().content()
    assert decodes.decoded == 0, "each view is served from the messages this process stored"
    history = model.prompts[-1].messages
    expected = [m for n in range(5) for m in (UserMessage(f"Question {n}?"), AssistantMessage(f"Answer {n}."))]
    assert [(m.role, getattr(m, "text", None)) for m in history[:-1]] == [(m.role, m.text) for m in expected]
    assert history[-1] == UserMessage("Question 5?")


def test_the_cache_is_keyed_by_the_payload_and_bounded(
    decodes: _CountingAdapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "_DECODED_MAX", 4)
    one, other = UserMessage("one"), UserMessage("one", metadata={"source": "import"})
    p1, p2 = log.encode_message(one), log.encode_message(other)
    assert log.decode_message(p1) == one and log.decode_message(p2) == other, "a different payload, its own entry"
    assert decodes.decoded == 0
    for n in range(4):
        log.encode_message(UserMessage(f"filler {n}"))
    assert len(log._DECODED) == 4 and p1 not in log._DECODED, "the oldest entries go first"
    assert log.decode_message(p1) == one and decodes.decoded == 1, "an evicted payload is decoded again"
    rewritten = p1.replace('"one"', '"uno"')
    assert log.decode_message(rewritten) == UserMessage("uno"), "a rewritten payload never meets a stale entry"


def test_a_subclass_is_stored_but_not_remembered_as_its_own_decoded_form(decodes: _CountingAdapter) -> None:
    class Tagged(UserMessage):
        pass

    payload = log.encode_message(Tagged(text="hi"))
    assert type(log.decode_message(payload)) is UserMessage and decodes.decoded == 1


@pytest.mark.parametrize(
    ("model", "usage"),
    [
        ("gpt-4o-mini", Usage(prompt_tokens=12, completion_tokens=3, cache_read_tokens=1, reasoning_tokens=2)),
        (None, Usage()),
        ('mod"el\\é ☃', Usage(prompt_tokens=10**20, cache_write_tokens=7)),
    ],
)
def test_the_usage_payload_is_the_sorted_json_it_always_was(model: str | None, usage: Usage) -> None:
    chat = ChatResponse([Generation(AssistantMessage("ok"))], ChatResponseMetadata(model=model, usage=usage))
    event = usage_event("t1", chat)
    assert event is not None
    assert event.payload == json.dumps({"model": model, **usage.model_dump()}, sort_keys=True)


def test_the_stored_form_is_the_message_json() -> None:
    from chatclient import SystemMessage, ToolCall, ToolResponseMessage
    from chatclient.messages import ToolResponse

    messages: list[Message] = [
        SystemMessage("Be brief.", metadata={"k": [1, 2.5, None]}),
        UserMessage("hé ☃", metadata={"nested": {"a": True}}),
        AssistantMessage("", tool_calls=[ToolCall(id="c1", name="f", arguments='{"x": 1}')], metadata={"id": "r1"}),
        ToolResponseMessage([ToolResponse(id="c1", name="f", response_data="42")]),
    ]
    for message in messages:
        assert log.encode_message(message) == message.model_dump_json()
        assert log._adapter().validate_json(log.encode_message(message)) == message
