"""The async call path does only what a call needs (benchmarks S5: 300 calls in flight, each object and
coroutine per call counted), and the shortcuts it takes give exactly what the long way gives."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from chatclient import (
    AssistantMessage,
    ChatClient,
    ChatOptions,
    ChatResponse,
    FinishReason,
    Prompt,
    Usage,
    UserMessage,
)
from chatclient._trusted import trusted
from chatclient.client import ChatClientRequestSpec
from chatclient.errors import MalformedResponseError
from chatclient.responses import ChatResponseMetadata, Generation, GenerationMetadata
from chatclient.testing import ScriptedChatModel
from providers._http import ProviderHttp, RetryPolicy
from providers.openai import OpenAIChatModel
from providers.openai._mapping import parse_response

# ------------------------------------------------------------------------------------------- trusted()


def _validated_and_trusted() -> list[tuple[BaseModel, BaseModel]]:
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "cache_read_tokens": 1, "cache_write_tokens": 0,
             "reasoning_tokens": 2}  # fmt: skip
    message = {"role": "assistant", "text": "hi", "tool_calls": (), "metadata": {"reasoning": "r"}}
    meta: dict[str, Any] = {"finish_reason": FinishReason.STOP, "extra": {"raw_finish_reason": "stop"}}
    pairs: list[tuple[BaseModel, BaseModel]] = [
        (Usage(**usage), trusted(Usage, dict(usage))),
        (AssistantMessage("hi", metadata={"reasoning": "r"}), trusted(AssistantMessage, dict(message))),
        (GenerationMetadata(**meta), trusted(GenerationMetadata, dict(meta))),
        (UserMessage("q"), trusted(UserMessage, {"role": "user", "text": "q", "metadata": {}, "media": ()})),
    ]
    output, gen_meta = pairs[1][1], pairs[2][1]
    assert isinstance(output, AssistantMessage) and isinstance(gen_meta, GenerationMetadata)
    generation = Generation(output, gen_meta)
    pairs.append((generation, trusted(Generation, {"output": output, "metadata": gen_meta})))
    metadata = ChatResponseMetadata(id="r1", model="m", usage=Usage(**usage), extra={"request_id": "x"})
    pairs.append((metadata, trusted(ChatResponseMetadata, {"id": "r1", "model": "m", "usage": Usage(**usage),
                                                          "extra": {"request_id": "x"}})))  # fmt: skip
    pairs.append((ChatResponse([generation], metadata),
                  trusted(ChatResponse, {"generations": (generation,), "metadata": metadata})))  # fmt: skip
    pairs.append((Prompt("q"), trusted(Prompt, {"messages": (UserMessage("q"),), "options": None})))
    return pairs


def test_a_trusted_model_is_the_validated_one() -> None:
    for validated, built in _validated_and_trusted():
        assert type(built) is type(validated)
        assert built == validated and validated == built
        try:
            expected_hash: int | None = hash(validated)
        except TypeError:  # a model with a dict field is not hashable, either way
            expected_hash = None
        if expected_hash is not None:
            assert hash(built) == expected_hash
        assert built.model_dump() == validated.model_dump()
        assert built.model_dump_json() == validated.model_dump_json()
        assert type(validated).model_validate_json(built.model_dump_json()) == validated
        assert repr(built) == repr(validated)
        assert built.model_copy(update={}) == validated


def test_a_trusted_model_is_frozen_and_copies_like_a_validated_one() -> None:
    built = trusted(Usage, {"prompt_tokens": 1, "completion_tokens": 2, "cache_read_tokens": 0,
                            "cache_write_tokens": 0, "reasoning_tokens": 0})  # fmt: skip
    with pytest.raises(ValidationError):
        built.prompt_tokens = 5
    assert built.model_copy(update={"prompt_tokens": 7}).prompt_tokens == 7
    assert built.prompt_tokens == 1


def test_trusted_wants_every_field_so_a_new_field_is_not_left_out() -> None:
    with pytest.raises(TypeError, match=r"missing fields \['cache_write_tokens'\], unknown fields \['typo'\]"):
        trusted(Usage, {"prompt_tokens": 1, "completion_tokens": 2, "cache_read_tokens": 0, "typo": 0,
                        "reasoning_tokens": 0})  # fmt: skip


def test_a_model_with_a_validator_is_validated_all_the_same() -> None:
    class Checked(BaseModel):
        model_config = ConfigDict(frozen=True)
        name: str

        @field_validator("name")
        @classmethod
        def _upper(cls, value: str) -> str:
            return value.upper()

    assert trusted(Checked, {"name": "abc"}).name == "ABC"
    with pytest.raises(ValidationError):
        trusted(Checked, {"name": 5})


# ------------------------------------------------------------------------------------------- replies


def _reply(**changes: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 1}},
    }
    reply.update(changes)
    return reply


def test_a_parsed_reply_equals_the_one_built_by_validation() -> None:
    parsed = parse_response(_reply(), {"x-request-id": "req-1"})
    expected = ChatResponse(
        [Generation(AssistantMessage("Hello"), GenerationMetadata(finish_reason=FinishReason.STOP,
                                                                  extra={"raw_finish_reason": "stop"}))],
        ChatResponseMetadata(id="chatcmpl-1", model="gpt-4o-mini", extra={"request_id": "req-1"},
                             usage=Usage(prompt_tokens=5, completion_tokens=2, reasoning_tokens=1)),
    )  # fmt: skip
    assert parsed == expected
    assert parsed.model_dump_json() == expected.model_dump_json()


def test_counts_that_are_not_ints_are_still_validated_and_converted() -> None:
    parsed = parse_response(_reply(usage={"prompt_tokens": "12", "completion_tokens": 3.0}))
    usage = parsed.metadata.usage
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (12, 3)
    assert type(usage.prompt_tokens) is int
    with pytest.raises(MalformedResponseError, match="usage"):
        parse_response(_reply(usage={"prompt_tokens": "many"}))


def test_an_id_or_model_that_is_not_a_string_is_malformed_as_before() -> None:
    with pytest.raises(MalformedResponseError, match="Unexpected Chat Completions reply"):
        parse_response(_reply(id=["not", "a", "string"]))
    with pytest.raises(MalformedResponseError, match="Unexpected Chat Completions reply"):
        parse_response(_reply(model={"name": "x"}))


# ------------------------------------------------------------------------------------------- the client


def test_a_spec_copy_is_what_replace_makes() -> None:
    client = ChatClient.create(ScriptedChatModel(["a"]))
    spec = client.prompt("question")
    assert spec == replace(client._defaults, user_text="question", user_media=())
    assert isinstance(spec, ChatClientRequestSpec)
    assert spec.system("be brief") == replace(spec, system_text="be brief")
    assert client._defaults.user_text is None, "the defaults are not changed"


def test_a_plain_user_text_makes_the_message_validation_would() -> None:
    client = ChatClient.create(ScriptedChatModel(["a"]))
    assert client.prompt("question")._messages() == [UserMessage("question")]
    with pytest.raises(ValidationError):
        client.prompt().user(5)._messages()  # type: ignore[arg-type]  # not a str: validated, refused


async def test_an_async_call_is_prepared_without_a_coroutine_unless_it_resumes_from_an_async_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a plain acall() needs no async preparation")

    monkeypatch.setattr(ChatClientRequestSpec, "_aprepare", refuse)
    client = ChatClient.create(ScriptedChatModel(["a", "b"]))
    assert await client.prompt("1").acall().content() == "a"
    chunks = [text async for text in client.prompt("2").astream().content()]
    assert "".join(chunks) == "b"


def test_the_model_merges_the_same_options_once() -> None:
    model = OpenAIChatModel("gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:9/v1")
    options = ChatOptions(temperature=0.5)
    first = model.options_for(Prompt("x", options))
    assert model.options_for(Prompt("y", options)) is first
    assert first.temperature == 0.5 and first.model == "gpt-4o-mini"
    other = model.options_for(Prompt("z", ChatOptions(temperature=0.1)))
    assert other is not first and other.temperature == 0.1


# ------------------------------------------------------------------------------------------- retries


def _http(handler: Any, retry: RetryPolicy) -> ProviderHttp:
    return ProviderHttp(provider="t", base_url="http://t.example", headers={}, error_details=lambda body: None,
                        async_http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
                        retry=retry)  # fmt: skip


async def test_the_success_path_does_not_wait_and_a_failure_is_still_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    statuses = iter([200, 503, 503, 200])

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(next(statuses), json={"ok": True})

    http = _http(handler, RetryPolicy(max_retries=2, initial_backoff=0.25))
    assert (await http.apost_json("/x", {}))[0] == {"ok": True}
    assert waits == []
    assert (await http.apost_json("/x", {}))[0] == {"ok": True}
    assert waits == [0.25, 0.5]


# ------------------------------------------------------------------------------------------- the import


def test_the_import_leaves_retry_reporting_and_entity_conversion_for_their_first_use() -> None:
    import subprocess
    import sys

    code = (
        "import sys, chatclient, providers.openai, providers.anthropic\n"
        "print('chatclient.observation' in sys.modules)\n"
        "from chatclient import ChatClient\n"
        "print('chatclient.structured_output' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["False", "False"]
