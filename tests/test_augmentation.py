"""Argument augmentation: the consumer gets the thought, the tool never sees it, metadata is kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from advisors.augmentation import ArgumentAugmentation, AugmentedCall
from advisors.tool_search import ToolSearchToolCallingAdvisor
from chatclient import (
    AssistantMessage,
    ChatClient,
    ToolCallDecision,
    ToolCallDecisions,
    ToolContext,
    ToolResponseMessage,
    awaiting_decision,
    turn_messages,
)
from chatclient.errors import ConfigurationError
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import FunctionToolCallback, ToolCallback


class Thought(BaseModel):
    inner_thought: str = Field(description="Why you call this tool, in one sentence.")


def tools(seen: list[Any]) -> list[ToolCallback]:
    def lookup(city: str, context: ToolContext) -> str:
        seen.append(("lookup", city, context.get("user")))
        return f"{city}: 20 C"

    def book(flight: str) -> str:
        seen.append(("book", flight))
        return f"booked {flight}"

    def answer(text: str) -> str:
        seen.append(("answer", text))
        return text

    return [
        FunctionToolCallback.builder("lookup", lookup).description("Weather of a city").build(),
        FunctionToolCallback.builder("book", book).description("Book a flight").requires_confirmation().build(),
        FunctionToolCallback.builder("answer", answer).description("Answer directly").return_direct().build(),
    ]


THOUGHT = "I need the weather first."


def call(name: str, args: dict[str, Any], id: str) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call(name, {"inner_thought": THOUGHT, **args}, id=id)])


@pytest.mark.parametrize("mode", MODES)
def test_the_consumer_gets_the_thought_and_the_tool_never_sees_it(mode: str) -> None:
    seen: list[Any] = []
    thoughts: list[AugmentedCall[Thought]] = []
    model = ScriptedChatModel([call("lookup", {"city": "Oslo"}, "c1"), "Oslo is warm."])
    augmentation = ArgumentAugmentation(Thought, thoughts.append)
    client = ChatClient.builder(model).default_tools(tools(seen)).default_tool_loop_extensions(augmentation).build()

    response, _ = run_spec(mode, client.prompt("Weather?").tool_context({"user": "ana"}))

    assert seen == [("lookup", "Oslo", "ana")]  # the context parameter still works
    assert [(t.call.name, t.values.inner_thought, t.round) for t in thoughts] == [("lookup", THOUGHT, 1)]
    schema = next(t for t in model.prompts[0].tool_callbacks if t.name == "lookup").definition.input_schema
    assert list(schema["properties"]) == ["inner_thought", "city"]  # type: ignore[arg-type]
    assert schema["required"] == ["inner_thought", "city"]
    assert response.chat_response is not None and response.chat_response.text == "Oslo is warm."


def test_return_direct_is_kept() -> None:
    seen: list[Any] = []
    model = ScriptedChatModel([call("answer", {"text": "42"}, "c1")])
    client = (
        ChatClient.builder(model)
        .default_tools(tools(seen))
        .default_tool_loop_extensions(ArgumentAugmentation(Thought))
        .build()
    )
    assert client.prompt("?").call().content() == "42"
    assert seen == [("answer", "42")] and model.calls == 1


@pytest.mark.parametrize("mode", ["call", "astream"])
def test_requires_confirmation_is_kept_and_the_pending_state_shows_the_thought(mode: str) -> None:
    seen: list[Any] = []
    thoughts: list[AugmentedCall[Thought]] = []
    model = ScriptedChatModel([call("book", {"flight": "VX205"}, "b1"), "Booked."])
    augmentation = ArgumentAugmentation(Thought, thoughts.append)
    client = ChatClient.builder(model).default_tools(tools(seen)).default_tool_loop_extensions(augmentation).build()

    paused, _ = run_spec(mode, client.prompt("Book VX205"))
    pending = awaiting_decision(paused)
    assert pending is not None and pending.awaiting_ids == ["b1"] and seen == []
    shown = augmentation.values_of(pending.calls[0])
    assert shown is not None and shown.inner_thought == THOUGHT
    assert [t.values.inner_thought for t in thoughts] == [THOUGHT]  # told before anyone decided

    resumed, _ = run_spec(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1"))))
    assert seen == [("book", "VX205")]
    assert resumed.chat_response is not None and resumed.chat_response.text == "Booked."
    assert len(thoughts) == 1  # the resume does not report the paused reply again


def test_a_missing_thought_is_told_to_the_model() -> None:
    seen: list[Any] = []
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("lookup", {"city": "Oslo"}, id="c1")]), "ok"]
    )
    client = (
        ChatClient.builder(model)
        .default_tools(tools(seen))
        .default_tool_loop_extensions(ArgumentAugmentation(Thought))
        .build()
    )
    response = client.prompt("?").call().chat_client_response()
    result = next(m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)).responses[0]
    assert result.is_error and "inner_thought" in result.response_data and seen == []


def test_augmenting_the_tools_that_search_found() -> None:
    seen: list[Any] = []
    thoughts: list[AugmentedCall[Thought]] = []
    filler = [
        FunctionToolCallback.builder(f"invoice_{i}", lambda ledger="": "ok")
        .description(f"Create, list or cancel invoices of ledger {i} for the accounting team.")
        .build()
        for i in range(40)
    ]
    model = ScriptedChatModel(
        [
            AssistantMessage(None, tool_calls=[tool_call("tool_search", {"query": "weather", "inner_thought": "?"})]),
            call("lookup", {"city": "Oslo"}, "c1"),
            "Warm.",
        ]
    )
    advisor = ToolSearchToolCallingAdvisor(extensions=[ArgumentAugmentation(Thought, thoughts.append)])
    client = ChatClient.builder(model).default_advisors(advisor).default_tools(*tools(seen), *filler).build()
    assert client.prompt("Weather in Oslo?").call().content() == "Warm."
    assert [[t.name for t in p.tool_callbacks] for p in model.prompts][1] == ["tool_search", "lookup"]
    assert seen == [("lookup", "Oslo", None)] and [t.call.name for t in thoughts] == ["tool_search", "lookup"]


def test_a_field_that_clashes_with_a_tool_argument_is_refused() -> None:
    class City(BaseModel):
        city: str

    with pytest.raises(ConfigurationError, match="already has argument"):
        ArgumentAugmentation(City).wrap(tools([])[0])
