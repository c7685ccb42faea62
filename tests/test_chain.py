"""The advisor chain: order, re-entrancy, context, missing modes, and BaseAdvisor in all four modes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from chatclient import (
    AdvisorChainError,
    AdvisorOrder,
    BaseAdvisor,
    CallNext,
    ChatClient,
    ChatClientRequest,
    ChatClientResponse,
    ChatResponse,
    StreamNext,
    UserMessage,
)
from chatclient.events import StreamEvent, TextDelta, TurnFinished
from chatclient.testing import ScriptedChatModel, check_advisor


class Recorder(BaseAdvisor):
    """Records the way in and out; several share one log."""

    def __init__(self, name: str, order: int, log: list[str]) -> None:
        self._label = name
        self.order = order
        self.log = log

    @property
    def name(self) -> str:
        return self._label

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        self.log.append(f"in:{self._label}")
        return request

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        self.log.append(f"out:{self._label}")
        return response


def test_advisors_run_by_order_with_ties_in_registration_order() -> None:
    log: list[str] = []
    client = (
        ChatClient.builder(ScriptedChatModel(["ok"]))
        .default_advisors(Recorder("late", 10, log), Recorder("tie-1", 0, log))
        .build()
    )
    client.prompt("hi").advisors(Recorder("tie-2", 0, log), Recorder("early", -5, log)).call().content()
    assert log == [
        "in:early", "in:tie-1", "in:tie-2", "in:late",
        "out:late", "out:tie-2", "out:tie-1", "out:early",
    ]  # fmt: skip


def test_an_advisor_at_lowest_precedence_still_runs_before_the_model() -> None:
    log: list[str] = []
    model = ScriptedChatModel(["ok"])
    ChatClient.create(model).prompt("hi").advisors(Recorder("last", AdvisorOrder.LOWEST, log)).call().content()
    assert log == ["in:last", "out:last"]


class TwiceAdvisor:
    """Calls the rest of the chain twice: the chain must be re-entrant."""

    name = "twice"
    order = 0

    def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
        first = next_(request)
        assert first.chat_response is not None
        again = request.with_prompt(request.prompt.with_messages([UserMessage(f"again: {first.chat_response.text}")]))
        return next_(again)


def test_the_chain_is_re_entrant() -> None:
    log: list[str] = []
    model = ScriptedChatModel(["one", "two"])
    reply = ChatClient.create(model).prompt("hi").advisors(TwiceAdvisor(), Recorder("inner", 10, log)).call().content()
    assert reply == "two"
    assert log == ["in:inner", "out:inner", "in:inner", "out:inner"]
    assert model.prompts[1].messages == (UserMessage("again: one"),)


def test_a_missing_mode_is_a_clear_error_naming_the_advisor() -> None:
    client = ChatClient.create(ScriptedChatModel(["ok"]))
    with pytest.raises(AdvisorChainError, match=r"'twice'.*stream\(\).*advise_stream"):
        list(client.prompt("hi").advisors(TwiceAdvisor()).stream().content())
    with pytest.raises(AdvisorChainError, match=r"acall\(\).*aadvise_call"):
        asyncio.run(client.prompt("hi").advisors(TwiceAdvisor()).acall().content())


class StreamOnly:
    """Upper-cases the text deltas and the final response alike."""

    name = "upper"
    order = 0

    def advise_stream(self, request: ChatClientRequest, next_: StreamNext) -> Iterator[StreamEvent]:
        for event in next_(request):
            if isinstance(event, TextDelta):
                yield TextDelta(event.text.upper(), event.index)
            elif isinstance(event, TurnFinished) and event.response.text is not None:
                chat = event.response.chat_response
                assert chat is not None
                yield TurnFinished(event.response.with_chat_response(ChatResponse.of(event.response.text.upper())))
            else:
                yield event


def test_an_around_stream_advisor_can_rewrite_events() -> None:
    client = ChatClient.create(ScriptedChatModel(["hello world"]))
    stream = client.prompt("hi").advisors(StreamOnly()).stream()
    assert "".join(stream.content()) == "HELLO WORLD"
    assert stream.response.text == "HELLO WORLD"


class ContextTagger(BaseAdvisor):
    """Rewrites the request (system prefix, context) and records what comes back."""

    def __init__(self) -> None:
        self.seen: list[ChatClientResponse] = []

    def before(self, request: ChatClientRequest) -> ChatClientRequest:
        tagged = request.prompt.with_messages([UserMessage("[tagged]"), *request.prompt.messages])
        return request.with_prompt(tagged).with_context(tag="t1")

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        self.seen.append(response)
        return response


def test_a_before_after_advisor_behaves_the_same_in_all_four_modes() -> None:
    made: list[ContextTagger] = []

    def factory() -> ContextTagger:
        made.append(ContextTagger())
        return made[-1]

    runs = check_advisor(factory, ["The answer is 42."], user="question")
    assert set(runs) == {"call", "stream", "acall", "astream"}
    for run in runs.values():
        assert run.prompts[0].messages == (UserMessage("[tagged]"), UserMessage("question"))
        assert run.text == "The answer is 42."
        assert run.response.context["tag"] == "t1"
    assert [len(a.seen) for a in made] == [1, 1, 1, 1], "after() runs exactly once per request in every mode"
    assert all(a.seen[0].chat_response is not None for a in made)
    assert {a.seen[0].chat_response.text for a in made if a.seen[0].chat_response} == {"The answer is 42."}
    assert len(runs["stream"].events) > 2, "the stream really arrived in several events"


def test_check_advisor_catches_an_advisor_that_differs_between_modes() -> None:
    class CallOnlyRewrite(BaseAdvisor):
        def advise_call(self, request: ChatClientRequest, next_: CallNext) -> ChatClientResponse:
            return next_(request.with_prompt(request.prompt.with_messages([UserMessage("changed")])))

    with pytest.raises(AssertionError, match="stream: the model received different prompts"):
        check_advisor(CallOnlyRewrite, ["ok"])
