"""A reply's ``GenerationMetadata`` for a common finish reason is one frozen instance shared by every
reply with that reason: nothing done through one reply may show in another, and every copy of it is
an ordinary model with an ordinary dict."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

from chatclient.responses import ChatResponse, FinishReason, GenerationMetadata
from providers.anthropic import _mapping as anthropic
from providers.openai import _mapping as openai


def _openai(text: str) -> ChatResponse:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    return openai.parse_response({"id": "r", "model": "m", "choices": [choice]})


def _anthropic(text: str) -> ChatResponse:
    usage = {"input_tokens": 1, "output_tokens": 2}
    content = [{"type": "text", "text": text}]
    reply = {"id": "r", "model": "m", "content": content, "stop_reason": "end_turn", "usage": usage}
    return anthropic.parse_response(reply)


PARSERS = {"openai": (_openai, "stop"), "anthropic": (_anthropic, "end_turn")}


def _metadata(reply: ChatResponse) -> GenerationMetadata:
    return reply.generations[0].metadata


@pytest.mark.parametrize("wire", PARSERS)
def test_two_replies_with_the_same_reason_share_one_metadata_equal_to_the_validated_one(wire: str) -> None:
    parse, raw = PARSERS[wire]
    first, second = _metadata(parse("a")), _metadata(parse("b"))
    assert first is second
    assert first == GenerationMetadata(finish_reason=FinishReason.STOP, extra={"raw_finish_reason": raw})
    assert first.model_dump() == {"finish_reason": FinishReason.STOP, "extra": {"raw_finish_reason": raw}}
    assert type(first.model_dump()["extra"]) is dict


@pytest.mark.parametrize(
    "change",
    [
        lambda extra: extra.__setitem__("x", 1),
        lambda extra: extra.__delitem__("raw_finish_reason"),
        lambda extra: extra.update(x=1),
        lambda extra: extra.setdefault("x", 1),
        lambda extra: extra.pop("raw_finish_reason"),
        lambda extra: extra.popitem(),
        lambda extra: extra.clear(),
        lambda extra: extra.__ior__({"x": 1}),
    ],
)
@pytest.mark.parametrize("wire", PARSERS)
def test_a_change_through_one_reply_is_refused_and_the_other_reply_is_unchanged(
    wire: str, change: Callable[[dict[str, Any]], Any]
) -> None:
    parse, raw = PARSERS[wire]
    one, other = parse("a"), parse("b")
    with pytest.raises(TypeError, match="shared"):
        change(_metadata(one).extra)
    with pytest.raises(pydantic.ValidationError):
        _metadata(one).finish_reason = FinishReason.LENGTH
    assert _metadata(other).extra == {"raw_finish_reason": raw}
    assert _metadata(other).finish_reason is FinishReason.STOP


@pytest.mark.parametrize("wire", PARSERS)
def test_copies_of_the_shared_metadata_are_ordinary_and_changing_them_leaves_it_alone(wire: str) -> None:
    parse, raw = PARSERS[wire]
    shared = _metadata(parse("a"))
    for extra in (dict(shared.extra), shared.extra.copy(), copy.copy(shared.extra), copy.deepcopy(shared.extra),
                  {**shared.extra}, shared.extra | {}):  # fmt: skip
        assert type(extra) is dict
        extra["x"] = 1
    deep = shared.model_copy(deep=True)
    deep.extra["x"] = 1
    updated = shared.model_copy(update={"extra": {"x": 1}})
    back = pickle.loads(pickle.dumps(shared))
    assert back == shared and type(back.extra) is dict
    assert updated.extra == {"x": 1}
    assert _metadata(parse("b")).extra == {"raw_finish_reason": raw}
    assert GenerationMetadata.model_validate_json(shared.model_dump_json()) == shared


def test_a_reply_with_more_than_the_reason_gets_its_own_metadata() -> None:
    with_logprobs = openai.parse_response(
        {"choices": [{"message": {"content": "a"}, "finish_reason": "stop", "logprobs": {"content": []}}]}
    )
    unknown = openai.parse_response({"choices": [{"message": {"content": "a"}, "finish_reason": "odd"}]})
    for reply in (with_logprobs, unknown):
        meta = _metadata(reply)
        meta.extra["x"] = 1  # its own dict: an ordinary one
        assert meta is not _metadata(_openai("b"))
    stop_sequence = anthropic.parse_response(
        {"content": [{"type": "text", "text": "a"}], "stop_reason": "stop_sequence", "stop_sequence": "END"}
    )
    assert _metadata(stop_sequence).extra == {"raw_finish_reason": "stop_sequence", "stop_sequence": "END"}
    assert type(_metadata(stop_sequence).extra) is dict
