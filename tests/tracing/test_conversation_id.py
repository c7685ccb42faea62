"""``gen_ai.conversation.id`` on the ``invoke_agent`` and ``chat`` spans when the application gives a
conversation id (``spec.conversation(id)``), in the four modes; never invented when it gives none."""

from __future__ import annotations

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.memory import CONVERSATION_ID, InMemorySessionRepository, SessionMemoryAdvisor
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tracing import _names

from .conftest import Otel


@tool(description="Get the weather of a city")
def weather(city: str) -> str:
    return f"Sunny in {city}"


def _conversation_ids(otel: Otel) -> dict[str, object]:
    return {span.name: (span.attributes or {}).get("gen_ai.conversation.id") for span in otel.spans()}


def test_the_context_key_is_the_one_memory_uses() -> None:
    assert _names.CONVERSATION_CONTEXT_KEY == CONVERSATION_ID


@pytest.mark.parametrize("mode", MODES)
def test_a_conversation_id_is_on_the_agent_and_chat_spans(otel: Otel, mode: str) -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"})]), "Sunny."])
    memory = SessionMemoryAdvisor(InMemorySessionRepository())
    client = (
        ChatClient.builder(model).default_tools(weather).default_advisors(memory).observers(otel.observer()).build()
    )
    response, _ = run_spec(mode, client.prompt("Weather in Oslo?").conversation("trip-42"))
    assert response.text == "Sunny."
    chats = [s for s in otel.spans() if s.name == "chat"]
    assert len(chats) == 2
    assert all((s.attributes or {}).get("gen_ai.conversation.id") == "trip-42" for s in chats)
    ids = _conversation_ids(otel)
    assert ids["invoke_agent"] == "trip-42"
    assert ids["execute_tool weather"] is None  # not an attribute of the tool span in the conventions


@pytest.mark.parametrize("mode", MODES)
def test_no_conversation_id_is_invented(otel: Otel, mode: str) -> None:
    client = ChatClient.builder(ScriptedChatModel(["Hello."])).observers(otel.observer()).build()
    run_spec(mode, client.prompt("Hi"))
    assert set(_conversation_ids(otel).values()) == {None}
