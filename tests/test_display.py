"""Short reprs and notebook markdown of responses and paused turns."""

from __future__ import annotations

from chatclient import AssistantMessage, ChatClient, ChatResponse, Usage, tool
from chatclient.testing import ScriptedChatModel, tool_call


class Flights:
    @tool(description="Book a flight", requires_confirmation=True)
    def book(self, flight: str) -> str:
        return f"Booked {flight}"


def test_a_chat_response_shows_its_text_finish_and_tokens() -> None:
    chat = ChatResponse.of("Hello there", usage=Usage(prompt_tokens=3, completion_tokens=2), model="m-1")
    assert repr(chat) == "ChatResponse(text='Hello there', finish=[None], tokens=5)"
    assert chat._repr_markdown_() == "Hello there\n\n*model `m-1` · 3 in / 2 out tokens*"
    assert len(repr(ChatResponse.of("x" * 500))) < 120


def test_a_paused_response_shows_what_it_waits_for_briefly() -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX|205"}, id="b1")])])
    paused = ChatClient.create(model).prompt("Book VX205").tools(Flights()).call().chat_client_response()
    assert repr(paused) == "ChatClientResponse(paused, awaiting=['b1'])"
    pending = paused.context["chatclient.tool_loop.pending"]
    assert repr(pending).startswith("PendingToolCalls(reply_id=") and "book(b1)" in repr(pending)
    table = (
        "**Paused**: 1 call(s) await a decision\n\n"
        "| id | tool | arguments | needs confirmation |\n|---|---|---|---|\n"
        '| b1 | `book` | `{"flight": "VX\\|205"}` | yes |'
    )
    assert pending._repr_markdown_() == table
    assert paused._repr_markdown_() == table


def test_a_finished_client_response_shows_the_answer() -> None:
    done = ChatClient.create(ScriptedChatModel(["All good."])).prompt("Hi").call().chat_client_response()
    assert repr(done).startswith("ChatClientResponse(ChatResponse(text='All good.'")
    assert done._repr_markdown_().startswith("All good.")
