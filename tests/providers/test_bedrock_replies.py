"""Bedrock replies read from real recorded traffic (pydantic-ai's cassettes): a ``Converse`` reply,
an error body, and three ``ConverseStream`` bodies (text, a tool call, signed reasoning) through
the event-stream decoder and the stream parser to the reply the chain assembles."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from chatclient.errors import BadRequestError, RateLimitError, ServerError, StreamIncompleteError
from chatclient.events import ModelEvent
from chatclient.responses import FinishReason
from providers._errors import error_from_response
from providers.bedrock._errors import error_details
from providers.bedrock._eventstream import EventMessage, EventStreamDecoder
from providers.bedrock._mapping import PROVIDER, REASONING_METADATA_KEY, parse_response
from providers.bedrock._stream_parser import StreamParser

from .fixtures import interactions, recorded_eventstream
from .model_events import assemble, reasoning, texts


def _events(name: str, index: int = 0) -> list[ModelEvent]:
    decoder, parser = EventStreamDecoder(PROVIDER), StreamParser()
    events: list[ModelEvent] = []
    for message in decoder.feed(recorded_eventstream(interactions("bedrock", name)[index])):
        events.extend(parser.feed(message))
    decoder.finish()
    parser.finish()
    return events


def test_a_converse_reply() -> None:
    (interaction,) = interactions("bedrock", "a_plain_text")
    body = interaction["response"]["body"]
    reply = parse_response(body, httpx2.Headers({"x-amzn-requestid": "req-1"}))
    (generation,) = reply.generations
    assert generation.output.text == body["output"]["message"]["content"][0]["text"]
    assert generation.output.text is not None and generation.output.text.startswith("Hello! How can I assist you")
    assert generation.metadata.finish_reason is FinishReason.STOP
    assert generation.metadata.extra == {"raw_finish_reason": "end_turn"}
    assert reply.metadata.usage is not None
    usage = body["usage"]
    assert (reply.metadata.usage.prompt_tokens, reply.metadata.usage.completion_tokens) == (
        usage["inputTokens"],
        usage["outputTokens"],
    )
    assert reply.metadata.extra == {"request_id": "req-1"}


def test_an_error_body_is_classed_by_its_status() -> None:
    (interaction,) = interactions("bedrock", "f_error_400_invalid_model")
    response = interaction["response"]
    error = error_from_response(
        PROVIDER, response["status"], httpx2.Headers(), json.dumps(response["body"]).encode(), error_details
    )
    assert isinstance(error, BadRequestError)
    assert "The provided model identifier is invalid." in error.message


def test_a_streamed_text_reply() -> None:
    events = _events("d_stream_text")
    reply = assemble(events)
    (generation,) = reply.generations
    assert generation.output.text == "".join(texts(events))
    assert generation.output.text is not None and generation.output.text.startswith("The capital of France is Paris.")
    assert generation.metadata.finish_reason is FinishReason.STOP
    assert reply.metadata.usage is not None
    assert (reply.metadata.usage.prompt_tokens, reply.metadata.usage.completion_tokens) == (13, 82)


def test_a_streamed_tool_call_and_the_answer_after_it() -> None:
    reply = assemble(_events("d_stream_tool_use_roundtrip", 0))
    (generation,) = reply.generations
    (call,) = generation.output.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("get_temperature", {"city": "Paris"})
    sent_back = interactions("bedrock", "d_stream_tool_use_roundtrip")[1]["request"]["body"]["messages"][1]
    assert call.id == sent_back["content"][1]["toolUse"]["toolUseId"], "the id the next request sends back"
    assert generation.metadata.finish_reason is FinishReason.TOOL_CALLS
    answer = assemble(_events("d_stream_tool_use_roundtrip", 1)).generations[0]
    assert answer.output.text == "The current temperature in Paris, the capital of France, is 30°C."


def test_streamed_reasoning_is_shown_and_kept_signed_to_be_sent_back() -> None:
    events = _events("d_stream_reasoning")
    (generation,) = assemble(events).generations
    assert "".join(reasoning(events)).startswith('The user has greeted me with a simple "Hello".')
    assert generation.output.text == "Hello! It's nice to meet you. How can I help you today?"
    blocks: Any = generation.output.metadata[REASONING_METADATA_KEY]
    (block,) = blocks
    text = block["reasoningContent"]["reasoningText"]
    assert text["text"] == "".join(reasoning(events))
    assert text["signature"].startswith("Eu0CCkgIBxAB")


@pytest.mark.parametrize(
    ("exception", "error"),
    [("throttlingException", RateLimitError), ("modelStreamErrorException", ServerError)],
)
def test_an_exception_message_is_the_matching_error(exception: str, error: type[Exception]) -> None:
    message = EventMessage({":message-type": "exception", ":exception-type": exception}, b'{"message":"slow down"}')
    with pytest.raises(error, match="slow down"):
        StreamParser().feed(message)


def test_a_stream_without_its_message_stop_is_incomplete() -> None:
    parser = StreamParser()
    decoder = EventStreamDecoder(PROVIDER)
    for message in decoder.feed(recorded_eventstream(interactions("bedrock", "d_stream_text")[0])):
        if message.headers[":event-type"] in ("messageStop", "metadata"):
            break
        parser.feed(message)
    with pytest.raises(StreamIncompleteError, match="messageStop"):
        parser.finish()
