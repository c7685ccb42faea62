"""A resume without the request-scoped tools its turn paused with: an approved call must not turn
into an "unknown tool" result the model reads. The resume is refused before anything runs, and the
state stays resumable (with the tools passed again)."""

from __future__ import annotations

import pytest

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage, tool
from chatclient.errors import ToolCallDecisionError
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallDecision, ToolCallDecisions, awaiting_decision


def book_then_answer(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return " / ".join(r.response_data for r in last.responses)
    return AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")])


@pytest.mark.parametrize("mode", MODES)
def test_an_allowed_call_whose_tool_was_not_passed_again_refuses_the_resume(mode: str) -> None:
    ran: list[str] = []

    @tool(description="Book", requires_confirmation=True)
    def book(name: str) -> str:
        ran.append(name)
        return f"booked {name}"

    model = ScriptedChatModel(book_then_answer)
    client = ChatClient.create(model)
    pending = awaiting_decision(run_spec(mode, client.prompt("book").tools(book))[0])
    assert pending is not None
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    with pytest.raises(ToolCallDecisionError, match=r"\['book'\] cannot run.*same tools on resume"):
        run_spec(mode, client.prompt().resume(pending, allow))
    assert ran == [] and len(model.prompts) == 1, "nothing ran and the model was not asked again"
    resumed, _ = run_spec(mode, client.prompt().tools(book).resume(pending, allow))  # the state was not used up
    assert resumed.chat_response is not None and resumed.chat_response.text == "booked Ada"
    assert ran == ["Ada"]


@pytest.mark.parametrize("mode", MODES)
def test_a_denied_call_needs_no_tool(mode: str) -> None:
    @tool(description="Book", requires_confirmation=True)
    def book(name: str) -> str:
        raise AssertionError("a denied tool never runs")

    client = ChatClient.create(ScriptedChatModel(book_then_answer))
    pending = awaiting_decision(run_spec(mode, client.prompt("book").tools(book))[0])
    assert pending is not None
    deny = ToolCallDecisions.of(ToolCallDecision.deny("b1", "Not today."))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, deny))
    assert resumed.chat_response is not None and resumed.chat_response.text == "Not today."


class _CountingSource:
    """A tool source with a cache and a fresh listing: which one each request asked is counted."""

    def __init__(self, callbacks: list[object]) -> None:
        self.callbacks = callbacks
        self.asked: list[str] = []

    async def tool_callbacks(self) -> list[object]:
        self.asked.append("cached")
        return self.callbacks

    async def fresh_tool_callbacks(self) -> list[object]:
        self.asked.append("fresh")
        return self.callbacks


@pytest.mark.parametrize("mode", MODES)
def test_a_resume_asks_a_source_for_its_fresh_listing_and_a_request_for_its_cache(mode: str) -> None:
    from chatclient.tools.decorator import tool_callbacks_from

    @tool(description="Book", requires_confirmation=True)
    def book(name: str) -> str:
        return f"booked {name}"

    source = _CountingSource(list(tool_callbacks_from(book)))
    client = ChatClient.builder(ScriptedChatModel(book_then_answer)).default_tools(source).build()
    pending = awaiting_decision(run_spec(mode, client.prompt("book"))[0])
    assert pending is not None and source.asked == ["cached"]
    resumed, _ = run_spec(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1"))))
    assert resumed.chat_response is not None and resumed.chat_response.text == "booked Ada"
    assert source.asked == ["cached", "fresh"]


@pytest.mark.parametrize("mode", MODES)
def test_a_stored_state_stays_in_its_store_when_the_tools_were_not_passed_again(mode: str) -> None:
    from chatclient.tools import InMemoryPendingToolCallStore

    ran: list[str] = []

    @tool(description="Book", requires_confirmation=True)
    def book(name: str) -> str:
        ran.append(name)
        return f"booked {name}"

    store = InMemoryPendingToolCallStore()
    client = ChatClient.create(ScriptedChatModel(book_then_answer))
    pending = awaiting_decision(run_spec(mode, client.prompt("book").tools(book))[0])
    assert pending is not None
    state_id = store.save(pending)
    allow = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    with pytest.raises(ToolCallDecisionError, match="same tools on resume"):
        run_spec(mode, client.prompt().resume_from(store, state_id, allow))
    assert ran == []
    resumed, _ = run_spec(mode, client.prompt().tools(book).resume_from(store, state_id, allow))
    assert resumed.chat_response is not None and resumed.chat_response.text == "booked Ada" and ran == ["Ada"]
