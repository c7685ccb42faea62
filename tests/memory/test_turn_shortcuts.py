"""The memory turn's shortcuts give what the general paths give: the usage payload written by an
f-string is ``json.dumps``'s text, the turn's prompt and request built through their slots equal the
validated ones, and the in-memory append stays all-or-nothing when an event is malformed part-way."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatclient import AssistantMessage, ChatClient, UserMessage
from chatclient import _builders as builders
from chatclient.advisor import ChatClientRequest
from chatclient.memory import InMemorySessionRepository, NewEvent, SessionMemoryAdvisor, turn_events
from chatclient.memory import advisor as advisor_module
from chatclient.memory.usage import usage_event
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, ChatResponseMetadata, Generation, Usage
from chatclient.testing import ScriptedChatModel

_counts = st.integers(min_value=0, max_value=10**12)


@given(
    model=st.one_of(st.none(), st.text(max_size=12)),
    counts=st.tuples(_counts, _counts, _counts, _counts, _counts),
)
def test_the_usage_payload_is_json_dumps_text(model: str | None, counts: tuple[int, ...]) -> None:
    prompt, completion, read, write, reasoning = counts
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=reasoning,
    )
    event = usage_event(
        "t1", ChatResponse([Generation(AssistantMessage("ok"))], ChatResponseMetadata(model=model, usage=usage))
    )
    assert event is not None and event.event_id == "t1:usage" and event.type == "usage"
    assert event.payload == json.dumps({"model": model, **usage.model_dump()}, sort_keys=True)


@pytest.mark.parametrize("odd", [True, 1.5])
def test_a_count_that_is_not_an_int_is_written_by_the_encoder(odd: Any) -> None:
    usage = Usage.model_construct(prompt_tokens=odd)  # not an int: the f-string would write it wrongly
    chat = ChatResponse([Generation(AssistantMessage("ok"))], ChatResponseMetadata(model="m", usage=usage))
    event = usage_event("t1", chat)
    assert event is not None
    assert event.payload == json.dumps({"model": "m", **usage.__dict__}, sort_keys=True)


def test_the_turn_prompt_and_request_are_the_validated_ones() -> None:
    messages = (UserMessage("before"), AssistantMessage("answer"), UserMessage("now"))
    assert vars(advisor_module)["build_prompt"] is builders.prompt  # the shared builder, checked once against Prompt
    built = builders.prompt(messages=messages, options=None)
    assert built == Prompt(messages=messages) and built.model_dump() == Prompt(messages=messages).model_dump()
    assert built.model_fields_set == {"messages", "options"}
    request = ChatClientRequest(built, {"k": 1})  # the advisor's request: the class's own slot-setting __init__
    assert request.prompt is built and request.context == {"k": 1}
    assert request == replace(request, context={"k": 1}), "equal to one built by dataclasses.replace"
    other = replace(request, context={"k": 2})  # replace() reaches the hand-written __init__ by keyword
    assert other.prompt is built and other.context == {"k": 2} and other != request
    with pytest.raises(FrozenInstanceError):
        request.context = {}  # type: ignore[misc]


def test_a_memory_turn_sends_the_history_and_stores_the_turn() -> None:
    repository = InMemorySessionRepository()
    repository.append("c", turn_events("t0", [UserMessage("first"), AssistantMessage("one")]))
    model = ScriptedChatModel(["two"])
    client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=10)).build()
    assert client.prompt().user("second").conversation("c").call().content() == "two"
    sent = model.prompts[-1].messages
    assert [getattr(m, "text", None) for m in sent] == ["first", "one", "second"]
    stored = [getattr(e.message(), "text", None) for e in repository.events("c", types=["message"])]
    assert stored == ["first", "one", "second", "two"]


def test_a_malformed_event_part_way_writes_nothing_of_the_batch() -> None:
    repository = InMemorySessionRepository()
    repository.append("c", turn_events("t0", [UserMessage("hi")]))
    good = NewEvent("t1:0", "t1", turn_events("t1", [UserMessage("q")])[0].payload)
    malformed: Any = ("t1:1", "t1")  # two fields, not four: refused when its record is built
    with pytest.raises(ValueError):
        repository.append("c", [good, malformed])
    assert repository.version("c") == 1 and [e.event_id for e in repository.events("c")] == ["t0:0"]
    result = repository.append("c", [good])  # nothing of the failed batch is remembered as stored
    assert (result.version, result.appended, result.replayed) == (2, 1, 0)


def test_without_the_tool_loop_each_turn_is_stored_under_its_own_new_id() -> None:
    from chatclient.advisor import ContextKeys

    repository = InMemorySessionRepository()
    client = (
        ChatClient.builder(ScriptedChatModel(["one", "two"]))
        .default_advisors(SessionMemoryAdvisor(repository, window=10))
        .build()
    )
    off = {ContextKeys.TOOL_CALLING_AUTO_REGISTER: False}
    for text in ("first", "second"):
        client.prompt().user(text).conversation("c").advisors(params=off).call().content()
    events = repository.events("c", types=["message"])
    assert [getattr(e.message(), "text", None) for e in events] == ["first", "one", "second", "two"]
    first, second = events[0].turn_id, events[2].turn_id
    assert first and second and first != second
    assert [e.event_id for e in events] == [f"{first}:0", f"{first}:1", f"{second}:0", f"{second}:1"]
