"""A body's option fields are read once per options object, and every request still gets its own body;
a reply's request id is read without httpx2's per-lookup decoding, with the same result."""

from __future__ import annotations

import httpx2

from chatclient import ChatOptions, Prompt, tool
from chatclient.options import ToolCallingChatOptions
from chatclient.tools.resolve import resolve_tools
from providers._errors import header_value
from providers._per_options import PerOptions
from providers.anthropic._mapping import build_request as anthropic_request
from providers.anthropic.options import AnthropicChatOptions
from providers.openai._mapping import build_request as openai_request
from providers.openai.options import OpenAIChatOptions


def test_the_value_is_computed_once_per_options_object_and_variant() -> None:
    computed: list[tuple[ChatOptions, object]] = []

    def compute(options: ChatOptions, variant: object) -> int:
        computed.append((options, variant))
        return len(computed)

    cache = PerOptions(compute)
    first, second = ChatOptions(model="m"), ChatOptions(model="m")
    assert [cache.get(first, 1), cache.get(first, 1), cache.get(first, 2), cache.get(second, 1)] == [1, 1, 2, 3]
    assert computed == [(first, 1), (first, 2), (second, 1)]


def test_a_full_table_is_emptied_and_refilled() -> None:
    cache = PerOptions(lambda options, variant: options.model, maxsize=2)
    options = [ChatOptions(model=str(n)) for n in range(5)]
    assert [cache.get(o) for o in options] == ["0", "1", "2", "3", "4"]
    assert len(cache._entries) <= 2


def test_each_request_gets_its_own_body_with_the_same_fields() -> None:
    options = OpenAIChatOptions(model="m", temperature=0.5, stop_sequences=("x",), seed=3, max_tokens=9)
    first = openai_request(Prompt("hi", options), options, stream=True)
    second = openai_request(Prompt("hello", options), options, stream=True)
    assert first is not second and first["messages"] is not second["messages"]
    assert list(first) == ["model", "messages", "stream", "stream_options", "temperature", "stop",
                           "max_completion_tokens", "seed"]  # fmt: skip
    assert {k: v for k, v in first.items() if k != "messages"} == {k: v for k, v in second.items() if k != "messages"}
    assert second["messages"] == [{"role": "user", "content": "hello"}]
    assert "stream" not in openai_request(Prompt("hi", options), options, stream=False)


def test_tools_are_read_on_every_request_and_placed_where_they_were() -> None:
    @tool
    def get_weather(city: str) -> str:
        """The weather."""
        return city

    (weather,) = resolve_tools([get_weather])

    options = OpenAIChatOptions(model="m", tool_callbacks=(weather,), tool_choice="auto", seed=1, temperature=0.0)
    body = openai_request(Prompt("hi", options), options, stream=False)
    assert list(body) == ["model", "messages", "temperature", "tools", "tool_choice", "seed"]
    anthropic = AnthropicChatOptions(model="c", tool_callbacks=(weather,), temperature=0.0, user_id="u")
    body = anthropic_request(Prompt("hi", anthropic), anthropic, stream=True)
    assert list(body) == ["model", "max_tokens", "messages", "temperature", "tools", "metadata", "stream"]
    plain = ToolCallingChatOptions(model="c")
    assert "tools" not in anthropic_request(Prompt("hi"), plain, stream=False)


def test_a_reply_header_is_read_as_httpx2_reads_it() -> None:
    pairs = [("Content-Type", "application/json"), ("X-Request-ID", "req_1"), ("x-dup", "a"), ("X-Dup", "b")]
    headers = httpx2.Headers([(k.encode(), v.encode()) for k, v in pairs] + [(b"x-latin", "caf\xe9".encode("latin-1"))])
    for name in ("x-request-id", "x-dup", "x-latin", "missing", "content-type"):
        assert header_value(headers, name.encode()) == headers.get(name)
    assert header_value({"x-request-id": "r"}, b"x-request-id") == "r"
    assert header_value(None, b"x-request-id") is None
