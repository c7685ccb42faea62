"""A ``ToolCallingManager`` subclass written to the documented SPI signature works in every mode:
``(self, prompt, chat_response, decisions=None, **extras)``, handing the keyword-only extras on."""

from __future__ import annotations

from typing import Any

import pytest

from advisors import ToolCallingAdvisor
from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage, tool
from chatclient.observation import ChatObserver, ToolInvocationInfo
from chatclient.responses import ChatResponse
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallDecisions, ToolCallingManager, ToolExecutionResult


class CountingManager(ToolCallingManager):
    """Counts the batches it runs and the extras the loop gave it, then does the usual work."""

    def __init__(self) -> None:
        super().__init__()
        self.extras: list[set[str]] = []

    def execute_tool_calls(
        self, prompt: Prompt, chat_response: ChatResponse, decisions: ToolCallDecisions | None = None, **extras: Any
    ) -> ToolExecutionResult:
        self.extras.append(set(extras))
        return super().execute_tool_calls(prompt, chat_response, decisions, **extras)

    async def aexecute_tool_calls(
        self, prompt: Prompt, chat_response: ChatResponse, decisions: ToolCallDecisions | None = None, **extras: Any
    ) -> ToolExecutionResult:
        self.extras.append(set(extras))
        return await super().aexecute_tool_calls(prompt, chat_response, decisions, **extras)


class SeenTools(ChatObserver):
    def __init__(self) -> None:
        self.tools: list[str] = []

    def tool_started(self, info: ToolInvocationInfo) -> None:
        self.tools.append(info.call.name)


@tool(description="Tomorrow's weather")
def forecast(city: str) -> str:
    return f"Sunny in {city}"


def script(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return last.responses[0].response_data
    return AssistantMessage(None, tool_calls=[tool_call("forecast", {"city": "Paris"})])


@pytest.mark.parametrize("mode", MODES)
def test_a_subclass_written_to_the_documented_signature_runs_the_loop(mode: str) -> None:
    manager, seen = CountingManager(), SeenTools()
    client = (
        ChatClient.builder(ScriptedChatModel(script))
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .observers(seen)
        .build()
    )
    response, _ = run_spec(mode, client.prompt("Weather in Paris?").tools(forecast))
    assert response.chat_response is not None and response.chat_response.result is not None
    assert response.chat_response.result.output.text == "Sunny in Paris"
    assert manager.extras == [{"observers"}], "the loop passes the documented extras, by keyword"
    assert seen.tools == ["forecast"], "handed on, the observers still see the tool run"
