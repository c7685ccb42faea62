"""The spans' context is put back: after a stream abandoned mid-way (the call ends before its inner
spans), and around a client called from inside a tool (a nested ``invoke_agent`` under the tool's
span, the outer call still counted and traced as one)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any, cast

from opentelemetry import trace

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.events import TextDelta
from chatclient.testing import ScriptedChatModel, tool_call

from .conftest import Otel


def test_an_abandoned_stream_leaves_no_span_current(otel: Otel) -> None:
    client = ChatClient.builder(ScriptedChatModel(["Hello there, a long reply"])).observers(otel.observer()).build()
    events = cast(Generator[Any, None, None], client.prompt("hi").stream().events())
    for event in events:
        if isinstance(event, TextDelta):
            break
    assert trace.get_current_span().is_recording()  # the chat span while the stream is open
    events.close()
    assert not trace.get_current_span().get_span_context().is_valid
    assert {s.name: dict(s.attributes or {}).get("error.type") for s in otel.spans()} == {
        "invoke_agent": "cancelled",
        "advisor ToolCallingAdvisor": "cancelled",
        "chat": "cancelled",
    }


async def test_an_abandoned_async_stream_leaves_no_span_current(otel: Otel) -> None:
    client = ChatClient.builder(ScriptedChatModel(["Hello there, a long reply"])).observers(otel.observer()).build()
    events = cast(AsyncGenerator[Any, None], client.prompt("hi").astream().events())
    async for event in events:
        if isinstance(event, TextDelta):
            break
    await events.aclose()
    assert not trace.get_current_span().get_span_context().is_valid
    # The root ends at once; the inner async generators (and their spans) end when the event loop
    # finalises them, which the test does not wait for.
    [root] = [s for s in otel.spans() if s.name == "invoke_agent"]
    assert dict(root.attributes or {})["error.type"] == "cancelled"


def test_a_client_called_from_a_tool_nests_under_the_tool_span(otel: Otel) -> None:
    observer = otel.observer()
    helper = ChatClient.builder(ScriptedChatModel(["Oslo is sunny."])).observers(observer).build()

    @tool
    def ask_helper(city: str) -> str:
        """Ask another agent."""
        return helper.prompt(f"Weather in {city}?").call().content() or ""

    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("ask_helper", {"city": "Oslo"}, id="h1")]), "Sunny."]
    )
    client = ChatClient.builder(model).default_tools(ask_helper).observers(observer).build()
    assert client.prompt("Weather?").call().content() == "Sunny."
    [root] = otel.tree()
    loop = root["children"][0]
    names = [child["name"] for child in loop["children"]]
    assert names == ["chat", "execute_tool ask_helper", "chat"]
    [nested] = loop["children"][1]["children"]
    assert nested["name"] == "invoke_agent"
    assert [c["name"] for c in nested["children"][0]["children"]] == ["chat"]
    [tools] = otel.metrics()["gen_ai.invoke_agent.tool_calls"]
    assert (tools.count, tools.sum) == (1, 1)  # the outer call's tool; the nested call ran none
    assert not trace.get_current_span().get_span_context().is_valid
