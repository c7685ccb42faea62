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


# ---------------------------------------------------------------------------- HTML, the client, events

SCRIPT = "<script>alert(1)</script>"


def test_html_escapes_what_the_model_and_the_tools_wrote() -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("book", {"flight": SCRIPT}, id="b<1>")])])
    paused = ChatClient.create(model).prompt("Book it").tools(Flights()).call().chat_client_response()
    pending = paused.context["chatclient.tool_loop.pending"]
    html = pending._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<td>b&lt;1&gt;</td><td><code>book</code></td>" in html and "<td>yes</td>" in html
    assert html.startswith('<div class="chatclient-paused"><p><strong>Paused</strong>: 1 call(s) await a decision')
    assert paused._repr_html_() == html
    chat = ChatResponse.of(f"Sure {SCRIPT}", model="m<1>")
    assert chat._repr_html_() == (
        '<div class="chatclient-response"><div style="white-space:pre-wrap">Sure &lt;script&gt;alert(1)&lt;/script&gt;'
        '</div><div style="opacity:0.7;font-size:smaller">model <code>m&lt;1&gt;</code></div></div>'
    )


def test_markdown_keeps_a_backtick_in_an_argument_inside_its_code_span() -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "`x`"}, id="b1")])])
    paused = ChatClient.create(model).prompt("Book it").tools(Flights()).call().chat_client_response()
    assert '| b1 | `book` | `` {"flight": "`x`"} `` | yes |' in paused._repr_markdown_()


class Status:
    @tool(description="Flight status")
    def status(self, flight: str) -> str:
        return "<b>on time</b>"


def test_the_client_shows_its_model_advisors_and_tools() -> None:
    from advisors import SimpleLoggerAdvisor

    client = (
        ChatClient.builder(ScriptedChatModel(["ok"]))
        .default_tools(Flights(), Status())
        .default_advisors(SimpleLoggerAdvisor())
        .default_system("Be <brief>")
        .build()
    )
    assert repr(client) == (
        "ChatClient(model=ScriptedChatModel, advisors=[SimpleLoggerAdvisor, ToolCallingAdvisor], tools=[book, status])"
    )
    assert client._repr_markdown_() == (
        "**ChatClient on `ScriptedChatModel`**\n\n"
        "- advisors: `SimpleLoggerAdvisor`, `ToolCallingAdvisor`\n"
        "- tools: `book` (needs confirmation), `status`\n"
        "- system: `Be <brief>`"
    )
    html = client._repr_html_()
    assert "<li>system: <code>Be &lt;brief&gt;</code></li>" in html and "<brief>" not in html


def test_stream_events_show_briefly_and_escape_in_html() -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("status", {"flight": SCRIPT}, id="s1")]), "On time " + "." * 100]
    )
    events = list(ChatClient.create(model).prompt("Status?").tools(Status()).stream().events())
    reprs = [repr(e) for e in events]
    assert all(len(r) < 160 for r in reprs), reprs
    assert 'ToolCallReady(status({"flight": "<script>alert(1)</script>"}), id=\'s1\', round=1)' in reprs
    assert "ToolResultReady(status -> '<b>on time</b>', id='s1', round=1)" in reprs
    assert "RoundFinished(round=1, finish='tool_calls', tokens=0)" in reprs
    assert reprs[-1].startswith("TurnFinished(ChatClientResponse(ChatResponse(text='On time ")
    for event in events:
        assert "<script>" not in event._repr_html_() and "<b>on" not in event._repr_html_()
    ready = next(e for e in events if type(e).__name__ == "ToolCallReady")
    assert ready._repr_markdown_() == '**tool call** `status` `{"flight": "<script>alert(1)</script>"}` (`s1`, round 1)'
    assert events[-1]._repr_markdown_().startswith("On time ")


def test_a_paused_stream_event_shows_the_table() -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("book", {"flight": "VX205"}, id="b1")])])
    events = list(ChatClient.create(model).prompt("Book").tools(Flights()).stream().events())
    paused = next(e for e in events if type(e).__name__ == "TurnPaused")
    assert repr(paused) == "TurnPaused(awaiting=['b1'])"
    assert paused._repr_markdown_().startswith("**Paused**: 1 call(s) await a decision")
    assert "<td>b1</td>" in paused._repr_html_()


def test_events_stay_slotted_dataclasses_that_compare_by_value() -> None:
    from chatclient.events import TextDelta, ToolCallStarted

    delta = TextDelta("Hel")
    assert not hasattr(delta, "__dict__") and delta == TextDelta("Hel") and hash(delta) == hash(TextDelta("Hel"))
    assert repr(TextDelta("x", index=2)) == "TextDelta('x', index=2)"
    assert repr(ToolCallStarted("c1", "book")) == "ToolCallStarted(id='c1', name='book')"
