from __future__ import annotations

from chatclient import AssistantMessage, ChatResponse, FinishReason, Generation, ToolCall, Usage
from chatclient.responses import ChatResponseMetadata, GenerationMetadata
from chatclient.streaming import ChatResponseAccumulator


def chunk(
    text: str | None = None,
    calls: list[ToolCall] | None = None,
    reason: FinishReason | None = None,
    usage: Usage | None = None,
) -> ChatResponse:
    return ChatResponse(
        [Generation(AssistantMessage(text, tool_calls=calls or []), GenerationMetadata(finish_reason=reason))],
        ChatResponseMetadata(id="r1", model="m", usage=usage),
    )


def test_text_and_split_tool_call_arguments_are_assembled_by_id() -> None:
    acc = ChatResponseAccumulator()
    for piece in [
        chunk("Let me "),
        chunk("check."),
        chunk(calls=[ToolCall(id="a", name="get_weather", arguments='{"ci')]),
        chunk(calls=[ToolCall(id="b", name="query_sales", arguments="")]),
        chunk(calls=[ToolCall(id="a", arguments='ty": "Par')]),
        chunk(calls=[ToolCall(id="b", arguments='{"period": "Q3"}')]),
        chunk(calls=[ToolCall(id="a", arguments='is"}')]),
        chunk(reason=FinishReason.TOOL_CALLS),
        ChatResponse([], ChatResponseMetadata(usage=Usage(prompt_tokens=5, completion_tokens=7))),
    ]:
        acc.add(piece)
    built = acc.build()
    assert built.text == "Let me check."
    assert built.tool_calls == (
        ToolCall(id="a", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="b", name="query_sales", arguments='{"period": "Q3"}'),
    )
    assert built.result is not None and built.result.finish_reason is FinishReason.TOOL_CALLS
    assert built.metadata.usage == Usage(prompt_tokens=5, completion_tokens=7)
    assert (built.metadata.id, built.metadata.model) == ("r1", "m")


def test_last_usage_wins_and_no_text_stays_none() -> None:
    acc = ChatResponseAccumulator()
    acc.add(chunk(usage=Usage(prompt_tokens=5, completion_tokens=1)))
    acc.add(chunk(usage=Usage(prompt_tokens=5, completion_tokens=9)))
    built = acc.build()
    assert built.usage == Usage(prompt_tokens=5, completion_tokens=9)
    assert built.text is None


def test_one_call_reply_equals_its_stream_reassembled() -> None:
    from chatclient import Prompt
    from chatclient.testing import ScriptedChatModel, tool_call

    reply = ChatResponse.of(
        AssistantMessage("Checking both.", tool_calls=[tool_call("f", {"x": 1}), tool_call("g", {"y": [1, 2]})]),
        finish_reason=FinishReason.TOOL_CALLS,
        usage=Usage(prompt_tokens=3, completion_tokens=4),
        id="resp",
        model="m",
    )
    model = ScriptedChatModel([reply], text_chunk_size=3, argument_chunks=4)
    chunks = list(model.stream(Prompt("hi")))
    fragments = [c for ch in chunks for g in ch.generations for c in g.output.tool_calls]
    assert len(fragments) >= 6, "arguments must really be split into several deltas"
    acc = ChatResponseAccumulator()
    for piece in chunks:
        acc.add(piece)
    assert acc.build() == reply
