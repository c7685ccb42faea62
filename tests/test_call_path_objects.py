"""The call path makes no copies it does not need: with 300 calls in flight, every object held per call
is scanned by the garbage collector (benchmarks S5), so unchanged values are passed on as they are."""

from __future__ import annotations

import inspect

from chatclient import ChatClientRequest, ChatClientResponse, Prompt
from chatclient._chain import _bind_acall


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
