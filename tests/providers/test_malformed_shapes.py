"""A recorded reply with one part of the wrong JSON type is a ``MalformedResponseError`` that says
what is wrong with the reply (``'choices' is a string, not a list``), never the parser's own
exception (``AttributeError: 'str' object has no attribute 'get'``).

Each reply is the provider's recorded plain-text reply with one part replaced, sent through the
model (``tests/providers/test_empty_replies.py`` builds them) in both call modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chatclient.errors import MalformedResponseError

from .test_empty_replies import answer, recorded_body


def _first(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: body[key][0]


# provider, what is replaced (a function of the body giving the object to edit), key, bad value, expected words
SHAPES: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str, Any, str]] = [
    ("openai-chat", lambda b: b, "choices", "zz", "'choices' is a string, not a list"),
    ("openai-chat", lambda b: b, "choices", {"0": 1}, "'choices' is an object, not a list"),
    ("openai-chat", lambda b: b, "choices", ["zz"], "choices[0] is a string, not an object"),
    ("openai-chat", _first("choices"), "message", [1], "choices[0].message is a list, not an object"),
    ("openai-chat", lambda b: b["choices"][0]["message"], "content", 5, "message.content is a number"),
    ("openai-chat", lambda b: b["choices"][0]["message"], "tool_calls", "zz", "tool_calls is a string, not a list"),
    ("openai-chat", lambda b: b["choices"][0]["message"], "tool_calls", [7], "tool_calls[0] is a number"),
    ("openai-chat", lambda b: b, "usage", "zz", "'usage' is a string, not an object"),
    ("anthropic", lambda b: b, "usage", [1], "'usage' is a list, not an object"),
    ("anthropic", _first("content"), "input", "zz", "'input' is a string, not an object"),
    ("openai-responses", lambda b: b, "usage", "zz", "'usage' is a string, not an object"),
    ("openai-responses", lambda b: next(i for i in b["output"] if i["type"] == "message"), "content", "zz",
     "'content' is a string, not a list"),
    ("ollama", lambda b: b, "message", "zz", "no message object"),
    ("ollama", lambda b: b["message"], "content", 5, "message.content is not a string"),
]  # fmt: skip


@pytest.mark.parametrize("mode", ["call", "acall"])
@pytest.mark.parametrize(("provider", "part", "key", "bad", "words"), SHAPES)
def test_a_part_of_the_wrong_type_is_named_not_the_parsers_exception(
    provider: str, part: Callable[[dict[str, Any]], dict[str, Any]], key: str, bad: Any, words: str, mode: str
) -> None:
    body = recorded_body(provider)
    target = part(body)
    if key == "input":  # the plain-text reply has no tool_use block: make its first block one
        target.clear()
        target.update({"type": "tool_use", "id": "toolu_1", "name": "lookup"})
    target[key] = bad
    with pytest.raises(MalformedResponseError) as raised:
        answer(provider, body, mode)
    message = str(raised.value)
    assert words in message
    assert "object has no attribute" not in message and "not iterable" not in message
    assert raised.value.body is not None, "the reply is kept on the error for the log"
