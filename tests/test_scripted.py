"""ScriptedChatModel: the test double the suite and users rely on."""

from __future__ import annotations

import asyncio

import pytest

from chatclient import AssistantMessage, Prompt, ScriptExhaustedError, Usage, UserMessage
from chatclient.streaming import ChatResponseAccumulator
from chatclient.testing import ScriptedChatModel, tool_call


def test_replies_in_order_and_records_every_prompt() -> None:
    model = ScriptedChatModel(["one", AssistantMessage("two")])
    assert model.call(Prompt("a")).text == "one"
    assert asyncio.run(model.acall(Prompt("b"))).text == "two"
    assert [p.messages for p in model.prompts] == [(UserMessage("a"),), (UserMessage("b"),)]
    assert model.remaining == 0


def test_running_out_of_replies_is_a_clear_error() -> None:
    model = ScriptedChatModel(["only"])
    model.call(Prompt("a"))
    with pytest.raises(ScriptExhaustedError, match="called 2 times but scripted 1"):
        model.call(Prompt("b"))


def test_an_exception_in_the_script_is_raised() -> None:
    model = ScriptedChatModel([TimeoutError("slow provider")])
    with pytest.raises(TimeoutError, match="slow provider"):
        list(model.stream(Prompt("a")))


def test_a_function_script_sees_the_prompt() -> None:
    model = ScriptedChatModel(lambda prompt: f"echo {len(prompt.messages)}", usage=Usage(prompt_tokens=1))
    reply = model.call(Prompt([UserMessage("a"), UserMessage("b")]))
    assert reply.text == "echo 2"
    assert reply.usage == Usage(prompt_tokens=1)


def test_streams_split_text_and_arguments_and_reassemble_exactly() -> None:
    call = tool_call("f", {"query": "a fairly long argument value"})
    model = ScriptedChatModel([AssistantMessage("Some text here.", tool_calls=[call])], text_chunk_size=3)
    chunks = list(model.stream(Prompt("go")))
    text_deltas = [c.text for c in chunks if c.text]
    fragments = [tc for c in chunks for g in c.generations for tc in g.output.tool_calls]
    assert len(text_deltas) == 5 and len(fragments) == 3
    assert all(f.id == call.id for f in fragments) and [f.name for f in fragments] == ["f", "", ""]
    accumulator = ChatResponseAccumulator()
    for chunk in chunks:
        accumulator.add(chunk)
    built = accumulator.build()
    assert built.text == "Some text here." and built.tool_calls == (call,)
