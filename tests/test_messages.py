"""Data types: frozen, convenient constructors, and any conversation round-trips through JSON."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from chatclient import (
    AssistantMessage,
    ChatOptions,
    ChatResponse,
    FilePart,
    FinishReason,
    Generation,
    ImagePart,
    JsonPart,
    Message,
    Prompt,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    Usage,
    UserMessage,
)
from chatclient.responses import ChatResponseMetadata, GenerationMetadata

CONVERSATION = TypeAdapter(list[Message])

text = st.text(max_size=40)
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
metadata = st.dictionaries(st.text(max_size=8), json_values, max_size=3)
tool_calls = st.builds(
    ToolCall, id=st.text(min_size=1, max_size=12), name=text, arguments=text, type=st.just("function")
)
base64_data = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
urls = st.sampled_from(["https://example.com/a.png", "https://example.com/doc.pdf", "data:,x"])
media = st.one_of(
    st.builds(ImagePart, data=base64_data, media_type=st.sampled_from(["image/png", "image/jpeg"])),
    st.builds(ImagePart, url=urls, media_type=st.none() | st.just("image/webp")),
    st.builds(
        FilePart,
        data=base64_data,
        media_type=st.sampled_from(["application/pdf", "text/plain"]),
        filename=st.none() | text,
    ),
    st.builds(FilePart, url=urls, media_type=st.none() | st.just("application/pdf"), filename=st.none() | text),
)
parts = st.lists(st.builds(TextPart, text) | st.builds(JsonPart, json_values) | media, max_size=4)
messages = st.one_of(
    st.builds(SystemMessage, text, metadata=metadata),
    st.builds(UserMessage, text, metadata=metadata),
    st.builds(UserMessage, text, media=st.lists(media, max_size=3), metadata=metadata),
    st.builds(AssistantMessage, st.none() | text, tool_calls=st.lists(tool_calls, max_size=3), metadata=metadata),
    st.builds(
        ToolResponseMessage,
        st.lists(
            st.builds(
                ToolResponse,
                id=text,
                name=text,
                response_data=text,
                is_error=st.booleans(),
                metadata=metadata,
                parts=parts,
                result_metadata=metadata,
            ),
            min_size=1,
            max_size=3,
        ),
        metadata=metadata,
    ),
)
usages = st.builds(
    Usage,
    prompt_tokens=st.integers(0, 10**6),
    completion_tokens=st.integers(0, 10**6),
    cache_read_tokens=st.integers(0, 10**6),
)
responses = st.builds(
    ChatResponse,
    st.lists(
        st.builds(
            Generation,
            st.builds(AssistantMessage, st.none() | text, tool_calls=st.lists(tool_calls, max_size=2)),
            st.builds(GenerationMetadata, finish_reason=st.none() | st.sampled_from(FinishReason), extra=metadata),
        ),
        max_size=2,
    ),
    st.builds(ChatResponseMetadata, id=st.none() | text, model=st.none() | text, usage=st.none() | usages),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=8))
def test_any_conversation_round_trips_through_json_unchanged(conversation: list[Message]) -> None:
    restored = CONVERSATION.validate_json(CONVERSATION.dump_json(conversation))
    assert restored == conversation
    assert [type(m) for m in restored] == [type(m) for m in conversation]


@settings(max_examples=100, deadline=None)
@given(responses)
def test_any_chat_response_round_trips_through_json_unchanged(response: ChatResponse) -> None:
    assert ChatResponse.model_validate_json(response.model_dump_json()) == response


@settings(max_examples=50, deadline=None)
@given(st.lists(messages, min_size=1, max_size=5))
def test_prompt_round_trips_with_common_options(conversation: list[Message]) -> None:
    prompt = Prompt(conversation, ChatOptions(model="m", temperature=0.5, stop_sequences=("x",)))
    assert Prompt.model_validate_json(prompt.model_dump_json()) == prompt


def test_messages_are_frozen() -> None:
    message = UserMessage("hi")
    with pytest.raises(ValidationError):
        message.text = "changed"


def test_positional_constructors_and_conveniences() -> None:
    call = ToolCall(id="c1", name="f", arguments="{}")
    reply = ChatResponse.of(AssistantMessage("thinking", tool_calls=[call]), usage=Usage(prompt_tokens=3))
    assert reply.text == "thinking"
    assert reply.tool_calls == (call,)
    assert reply.has_tool_calls
    assert reply.usage.total_tokens == 3
    assert Prompt("hello").messages == (UserMessage("hello"),)
    assert Prompt(UserMessage("x")).last_user_message == UserMessage("x")


def test_usage_adds_field_by_field() -> None:
    total = Usage(prompt_tokens=1, completion_tokens=2, reasoning_tokens=1) + Usage(
        prompt_tokens=10, completion_tokens=20, cache_read_tokens=5
    )
    assert total == Usage(prompt_tokens=11, completion_tokens=22, cache_read_tokens=5, reasoning_tokens=1)
    assert total.total_tokens == 33


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValidationError):
        CONVERSATION.validate_python([{"role": "robot", "text": "x"}])


def test_a_user_message_carries_images_and_documents_and_round_trips() -> None:
    photo = ImagePart.from_bytes(b"\x89PNG", "image/png")
    report = FilePart(url="https://example.com/report.pdf", media_type="application/pdf")
    message = UserMessage("What is in these?", media=[photo, report])
    assert message.media == (photo, report)
    assert CONVERSATION.validate_json(CONVERSATION.dump_json([message])) == [message]
    assert UserMessage("hi").media == ()


def test_a_user_message_stored_before_media_existed_still_loads() -> None:
    assert CONVERSATION.validate_json(b'[{"role":"user","text":"hi","metadata":{}}]') == [UserMessage("hi")]


def test_user_media_takes_images_and_files_only() -> None:
    with pytest.raises(ValidationError):
        UserMessage("x", media=[TextPart("not media")])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="exactly one of data"):
        CONVERSATION.validate_python([{"role": "user", "text": "x", "media": [{"type": "image"}]}])
