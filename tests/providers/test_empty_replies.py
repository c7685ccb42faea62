"""A 200 reply with nothing to read is a ``MalformedResponseError`` naming what was missing, never a
silent ``None`` answer; an empty reply the API documents as valid still parses.

Each reply is a recorded one (``tests/fixtures/provider-traffic``) with the part in question emptied,
sent through the model over an ``httpx2.MockTransport`` in both call modes.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import MalformedResponseError
from chatclient.model import ChatModel
from chatclient.responses import FinishReason
from providers._retry import RetryPolicy
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel
from providers.openai_responses import OpenAIResponsesChatModel

from .fixtures import interactions

Factory = Callable[[httpx2.Client, httpx2.AsyncClient], ChatModel]

MODELS: dict[str, tuple[str, Factory]] = {
    "openai-chat": ("a_plain_text", lambda c, a: OpenAIChatModel(
        "gpt-4o", api_key="k", http_client=c, async_http_client=a, retry=RetryPolicy(max_retries=0))),
    "openai-responses": ("a_plain_text", lambda c, a: OpenAIResponsesChatModel(
        "gpt-5", api_key="k", http_client=c, async_http_client=a, retry=RetryPolicy(max_retries=0))),
    "anthropic": ("a_plain_text", lambda c, a: AnthropicChatModel(
        "claude-x", api_key="k", http_client=c, async_http_client=a, retry=RetryPolicy(max_retries=0))),
    "ollama": ("native_a_plain_text", lambda c, a: OllamaChatModel(
        "qwen3", http_client=c, async_http_client=a, retry=RetryPolicy(max_retries=0))),
}  # fmt: skip


def recorded_body(provider: str) -> dict[str, Any]:
    """A deep copy of the provider's recorded plain-text reply body, to be edited."""
    body: dict[str, Any] = interactions(provider, MODELS[provider][0])[0]["response"]["body"]
    return copy.deepcopy(body)


def answer(provider: str, body: dict[str, Any], mode: str) -> str | None:
    """The answer of one ``call``/``acall`` whose reply is ``body``."""
    content = json.dumps(body).encode()

    def reply(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=content)

    client = httpx2.Client(transport=httpx2.MockTransport(reply))
    async_client = httpx2.AsyncClient(transport=httpx2.MockTransport(reply))
    model = MODELS[provider][1](client, async_client)
    spec = ChatClient.create(model).prompt("hi")
    try:
        if mode == "call":
            return spec.call().content()

        async def go() -> str | None:
            try:
                return await spec.acall().content()
            finally:
                await async_client.aclose()

        return asyncio.run(go())
    finally:
        client.close()


def _no_choices(body: dict[str, Any]) -> None:
    body["choices"] = []


def _choice_without_message(body: dict[str, Any]) -> None:
    del body["choices"][0]["message"]


def _completed_without_output(body: dict[str, Any]) -> None:
    body["output"] = []


def _queued_without_output(body: dict[str, Any]) -> None:
    body.update(status="queued", output=[])


def _no_content_no_stop_reason(body: dict[str, Any]) -> None:
    body.update(content=[], stop_reason=None)


def _not_done(body: dict[str, Any]) -> None:
    body["done"] = False


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("openai-chat", _no_choices, "no choices ('choices' is empty)"),
    ("openai-chat", _choice_without_message, "choices[0].message is missing, not an object"),
    ("openai-responses", _completed_without_output, "'output' is empty (status 'completed')"),
    ("openai-responses", _queued_without_output, "'output' is empty (status 'queued')"),
    ("anthropic", _no_content_no_stop_reason, "'content' is empty and it has no 'stop_reason'"),
    ("ollama", _not_done, "'done': false"),
]


@pytest.mark.parametrize("mode", ["call", "acall"])
@pytest.mark.parametrize(
    ("provider", "empty", "says"), MALFORMED, ids=[f"{p}-{e.__name__.strip('_')}" for p, e, _ in MALFORMED]
)
def test_a_reply_with_nothing_to_read_is_malformed(
    provider: str, empty: Callable[[dict[str, Any]], None], says: str, mode: str
) -> None:
    body = recorded_body(provider)
    assert answer(provider, body, mode), "the recorded reply itself has an answer"
    empty(body)
    with pytest.raises(MalformedResponseError) as raised:
        answer(provider, body, mode)
    assert says in raised.value.message
    assert raised.value.provider and raised.value.body == body, "the reply is kept on the error"


def test_an_anthropic_empty_content_with_a_stop_reason_is_an_empty_answer() -> None:
    """Anthropic documents ``content: []`` with ``end_turn`` (nothing to add after a tool result)."""
    from providers.anthropic._mapping import parse_response

    body = recorded_body("anthropic")
    body["content"] = []
    result = parse_response(body).result
    assert result is not None and result.output.text is None and result.finish_reason is FinishReason.STOP


def test_a_responses_reply_cut_before_any_item_is_a_length_stop() -> None:
    """``incomplete`` at ``max_output_tokens`` may have an empty ``output``: a truncated reply, not a malformed one."""
    from providers.openai_responses._mapping import parse_response

    body = recorded_body("openai-responses")
    body.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"}, output=[])
    result = parse_response(body, {}).result
    assert result is not None and result.finish_reason is FinishReason.LENGTH


def test_an_ollama_empty_final_answer_is_an_empty_string() -> None:
    """A finished (``done: true``) reply whose content is empty is a model that said nothing."""
    body = recorded_body("ollama")
    body["message"]["content"] = ""
    assert answer("ollama", body, "call") == ""
