"""Call ids: how a reply's calls get ids of their own, and what holds them apart (issue 29, item 1).

The per-provider wire tests are in ``tests/providers/test_call_ids.py``; these check the pieces:
the assignment, the message and its builder, the stream accumulator, the OpenAI chat parser's
keying, the manager's refusal and the pending state's digest.
"""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from chatclient import (
    AssistantMessage,
    ChatResponse,
    ConfigurationError,
    PendingStateTamperedError,
    Prompt,
    ToolCall,
    ToolCallingChatOptions,
    UserMessage,
    tool,
)
from chatclient import _builders as built
from chatclient.events import ToolCallDelta, ToolCallStarted
from chatclient.messages import CallIds, Message, distinct_call_ids, provider_call_ids
from chatclient.streaming import ChatResponseAccumulator
from chatclient.tools import ToolCallConfirmationRequired, ToolCallingManager, resolve_tools
from providers.openai._stream_parser import StreamParser as OpenAIStreamParser


def _ids(*wire: str) -> list[str]:
    assigner = CallIds()
    return [assigner.assign(w) for w in wire]


# ---------------------------------------------------------------------------------- the assignment


def test_a_first_seen_id_is_kept_a_repeat_is_numbered_by_position() -> None:
    assert _ids("c1", "c1", "c2", "c1") == ["c1", "c1#2", "c2", "c1#4"]


def test_empty_ids_are_numbered_by_position() -> None:
    assert _ids("", "a", "") == ["call_1", "a", "call_3"]


def test_an_assigned_id_never_takes_one_already_given() -> None:
    assert _ids("call_1", "") == ["call_1", "call_2"]
    assert _ids("", "call_1") == ["call_1", "call_1#2"]
    assert _ids("c1", "c1#2", "c1") == ["c1", "c1#2", "c1#3"]
    assert _ids("c1#2", "c1", "c1") == ["c1#2", "c1", "c1#3"]
    assert _ids("x", "call_2", "") == ["x", "call_2", "call_3"]
    assert _ids("call_2", "call_1", "", "") == ["call_2", "call_1", "call_3", "call_4"]
    # taken by a provider's own id: a suffix makes it free
    assert _ids("a", "a", "a#2") == ["a", "a#2", "a#2#3"]
    assert _ids("a", "a#2_2", "a#2", "a") == ["a", "a#2_2", "a#2", "a#4"]


def test_assigned_ids_for_missing_ones_are_valid_everywhere() -> None:
    """What goes on the wire for a call without an id must fit Anthropic's ``^[a-zA-Z0-9_-]+$``."""
    import re

    wire = ("", "call_1", "", "call_2", "call_5", "")
    for given, own in zip(wire, _ids(*wire), strict=True):
        if not given:
            assert re.fullmatch(r"[a-zA-Z0-9_-]+", own), own
    assert _ids("call_2", "") == ["call_2", "call_2_2"]


def test_distinct_ids_cost_nothing_and_keep_the_tuple() -> None:
    calls = (ToolCall(id="a", name="t"), ToolCall(id="b", name="t"))
    assert distinct_call_ids(calls) is calls


def test_the_message_assigns_and_records_the_provider_id() -> None:
    message = AssistantMessage(tool_calls=[ToolCall(id="c1", name="t"), ToolCall(id="c1", name="t"), ToolCall(id="")])
    assert [(c.id, c.wire_id, c.provider_id) for c in message.tool_calls] == [
        ("c1", None, "c1"),
        ("c1#2", "c1", "c1"),
        ("call_3", "", "call_3"),
    ]
    assert provider_call_ids(message) == {"c1#2": "c1"}


def test_the_builder_assigns_as_the_message_does() -> None:
    calls = (ToolCall(id="c1", name="t"), ToolCall(id="c1", name="t"))
    fast = built.assistant_message(role="assistant", text=None, tool_calls=calls, metadata={})
    assert fast == AssistantMessage(tool_calls=calls)
    assert [c.id for c in fast.tool_calls] == ["c1", "c1#2"]


def test_a_stored_reply_maps_the_same_way_again() -> None:
    message = AssistantMessage(tool_calls=[ToolCall(id="c1", name="t"), ToolCall(id="c1", name="t")])
    again = AssistantMessage.model_validate_json(message.model_dump_json())
    assert again == message
    (listed,) = TypeAdapter(list[Message]).validate_json(json.dumps([message.model_dump()]))
    assert listed == message


def test_a_stored_reply_with_shared_ids_is_given_its_own_on_loading() -> None:
    raw = '[{"role": "assistant", "tool_calls": [{"id": "c1", "name": "t"}, {"id": "c1", "name": "t"}]}]'
    (loaded,) = TypeAdapter(list[Message]).validate_json(raw)
    assert isinstance(loaded, AssistantMessage)
    assert [c.id for c in loaded.tool_calls] == ["c1", "c1#2"]


# ---------------------------------------------------------------------------------- streams


def _assemble(*events: object) -> AssistantMessage:
    accumulator = ChatResponseAccumulator()
    for event in events:
        accumulator.add(event)  # type: ignore[arg-type]
    result = accumulator.build().result
    assert result is not None
    return result.output


def test_the_accumulator_never_merges_two_started_calls_of_one_id() -> None:
    """A parser that passes the provider's repeated id on: the second start is a second call."""
    message = _assemble(
        ToolCallStarted("c1", "transfer"),
        ToolCallDelta("c1", '{"to": "alice"}'),
        ToolCallStarted("c1", "transfer"),
        ToolCallDelta("c1", '{"to": "mallory"}'),
    )
    assert [(c.id, c.wire_id, c.arguments) for c in message.tool_calls] == [
        ("c1", None, '{"to": "alice"}'),
        ("c1#2", "c1", '{"to": "mallory"}'),
    ]


def test_a_name_sent_after_the_first_fragment_is_still_one_call() -> None:
    message = _assemble(
        ToolCallStarted("c1", ""), ToolCallDelta("c1", '{"a":'), ToolCallStarted("c1", "f"), ToolCallDelta("c1", "1}")
    )
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("c1", "f", '{"a":1}')]


def _chat_chunk(*fragments: dict[str, object], finish: str | None = None) -> dict[str, object]:
    delta = {"tool_calls": list(fragments)} if fragments else {}
    return {"id": "x", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _parse_chat(*events: dict[str, object]) -> AssistantMessage:
    parser = OpenAIStreamParser()
    out = [e for event in events for e in parser.feed(event)]
    parser.finish(saw_done=True)
    return _assemble(*out)


def test_openai_chat_fragments_interleaved_under_one_id_stay_two_calls() -> None:
    """Keyed by the wire's ``index``: fragments of two calls sharing an id, interleaved."""
    start = {"type": "function", "id": "c1", "function": {"name": "transfer", "arguments": ""}}
    message = _parse_chat(
        _chat_chunk({"index": 0, **start}, {"index": 1, **start}),
        _chat_chunk({"index": 0, "function": {"arguments": '{"to":'}}),
        _chat_chunk({"index": 1, "function": {"arguments": '{"to":'}}),
        _chat_chunk({"index": 1, "function": {"arguments": '"mallory"}'}}),
        _chat_chunk({"index": 0, "function": {"arguments": '"alice"}'}}),
        _chat_chunk(finish="tool_calls"),
    )
    assert [(c.id, c.wire_id, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("c1", None, {"to": "alice"}),
        ("c1#2", "c1", {"to": "mallory"}),
    ]


def test_openai_chat_fragments_without_index_start_a_call_at_each_name() -> None:
    """A server that sends no ``index`` and repeats the id: a named fragment is the next call."""
    message = _parse_chat(
        _chat_chunk({"id": "c1", "function": {"name": "transfer", "arguments": '{"to":"alice"}'}}),
        _chat_chunk({"id": "c1", "function": {"name": "transfer", "arguments": '{"to":'}}),
        _chat_chunk({"id": "c1", "function": {"arguments": '"mallory"}'}}),
        _chat_chunk(finish="tool_calls"),
    )
    assert [(c.id, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("c1", {"to": "alice"}),
        ("c1#2", {"to": "mallory"}),
    ]


def test_openai_chat_fragments_that_repeat_their_id_are_still_one_call() -> None:
    """Some servers send the id with every fragment of a call: same index, same id, one call."""
    first = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":'}}
    message = _parse_chat(
        _chat_chunk(first),
        _chat_chunk({"index": 0, "id": "c1", "function": {"arguments": "1}"}}),
        _chat_chunk(finish="tool_calls"),
    )
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("c1", '{"a":1}')]


# ---------------------------------------------------------------------------------- the manager and the digest


@tool(requires_confirmation=True)
def transfer(to: str, amount: int) -> str:
    return f"sent {amount} to {to}"


PROMPT = Prompt([UserMessage("pay")], ToolCallingChatOptions(tool_callbacks=resolve_tools([transfer])))


def _paused(*calls: ToolCall) -> ToolCallConfirmationRequired:
    with pytest.raises(ToolCallConfirmationRequired) as paused:
        ToolCallingManager().execute_tool_calls(PROMPT, ChatResponse.of(AssistantMessage(tool_calls=list(calls))))
    return paused.value


ALICE = '{"to": "alice", "amount": 5}'
MALLORY = '{"to": "mallory", "amount": 99999}'


def test_a_pause_never_holds_two_calls_with_one_id() -> None:
    paused = _paused(
        ToolCall(id="c1", name="transfer", arguments=ALICE), ToolCall(id="c1", name="transfer", arguments=MALLORY)
    )
    assert paused.awaiting_ids == ["c1", "c1#2"]
    assert [(c.id, c.wire_id) for c in paused.pending.calls] == [("c1", None), ("c1#2", "c1")]
    paused.pending.verify()


def test_the_manager_refuses_a_reply_built_around_the_assignment() -> None:
    from chatclient._trusted import trusted

    calls = (ToolCall(id="c1", name="transfer", arguments=ALICE), ToolCall(id="c1", name="transfer", arguments=MALLORY))
    shared = trusted(AssistantMessage, {"role": "assistant", "text": None, "tool_calls": calls, "metadata": {}})
    with pytest.raises(ConfigurationError, match="id of their own"):
        ToolCallingManager().execute_tool_calls(PROMPT, ChatResponse.of(shared))


def test_the_digest_covers_the_provider_id() -> None:
    pending = _paused(
        ToolCall(id="c1", name="transfer", arguments=ALICE), ToolCall(id="c1", name="transfer", arguments=MALLORY)
    ).pending
    # The listed call's provider id changed alone: it no longer matches the reply.
    calls = (pending.calls[0], pending.calls[1].model_copy(update={"wire_id": "c9"}))
    with pytest.raises(PendingStateTamperedError):
        pending.model_copy(update={"calls": calls}).verify()
    # Changed in the reply too, without the digest: refused by the digest.
    reply = pending.reply
    moved = AssistantMessage(tool_calls=[reply.tool_calls[0], reply.tool_calls[1].model_copy(update={"wire_id": "c9"})])
    altered = pending.model_copy(update={"calls": calls, "conversation": (*pending.conversation[:-1], moved)})
    with pytest.raises(PendingStateTamperedError):
        altered.verify()


def test_the_stored_form_of_a_call_with_its_own_provider_id_is_unchanged() -> None:
    """``wire_id`` is written only when set: what older readers (``extra="forbid"``) load stays loadable."""
    message = AssistantMessage(tool_calls=[ToolCall(id="c1", name="t"), ToolCall(id="c1", name="t")])
    first, second = message.model_dump()["tool_calls"]
    assert "wire_id" not in first and second["wire_id"] == "c1"
    pending = _paused(ToolCall(id="a", name="transfer", arguments=ALICE)).pending
    assert "wire_id" not in pending.model_dump_json()
