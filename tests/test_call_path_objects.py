"""The call path makes no copies it does not need: with 300 calls in flight, every object held per call
is scanned by the garbage collector (benchmarks S5), so unchanged values are passed on as they are."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import chatclient._chain
import chatclient.response_spec as response_spec
from chatclient import ChatClient, ChatClientRequest, ChatClientResponse, Prompt
from chatclient._chain import _bind_acall
from chatclient.observation import ChatObserver
from chatclient.testing import ScriptedChatModel


def test_a_round_over_the_same_messages_reuses_the_prompt_and_the_request() -> None:
    prompt = Prompt("hi")
    request = ChatClientRequest(prompt, {"k": 1})
    assert prompt.with_messages(prompt.messages) is prompt
    assert request.with_prompt(prompt) is request
    changed = prompt.with_messages((*prompt.messages, *prompt.messages))
    assert changed is not prompt and len(changed.messages) == 2
    assert request.with_prompt(changed).prompt is changed and request.with_prompt(changed).context == {"k": 1}


async def test_an_async_advisor_link_hands_back_the_advisors_own_coroutine() -> None:
    seen: list[ChatClientRequest] = []

    async def inner(request: ChatClientRequest) -> ChatClientResponse:
        return ChatClientResponse(None, request.context)

    async def advise(request: ChatClientRequest, next_: object) -> ChatClientResponse:
        seen.append(request)
        assert next_ is inner
        return await inner(request)

    link = _bind_acall(advise, inner)
    assert not inspect.iscoroutinefunction(link)  # no wrapper coroutine per call
    awaitable = link(ChatClientRequest(Prompt("hi")))
    assert inspect.iscoroutine(awaitable) and awaitable.cr_code is advise.__code__
    assert (await awaitable).context == {}
    assert len(seen) == 1


def test_a_client_composes_its_chain_once_per_mode_and_not_for_observed_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    composed: list[object] = []
    real = chatclient._chain.compose_call

    def counting(*args: Any) -> Any:
        composed.append(args[0])
        return real(*args)

    monkeypatch.setattr(response_spec, "compose_call", counting)
    client = ChatClient.create(ScriptedChatModel(["a", "b", "c", "d"]))
    assert client.prompt("1").call().content() == "a"
    assert client.prompt("2").call().content() == "b"
    assert len(composed) == 1, "the second request reuses the composed chain"
    assert client.prompt("3").observers(ChatObserver()).call().content() == "c"
    assert len(composed) == 2, "an observed request composes its own"
    other = ChatClient.create(ScriptedChatModel(["x"]))
    assert other.prompt("4").call().content() == "x"
    assert len(composed) == 3, "each client has its own"
