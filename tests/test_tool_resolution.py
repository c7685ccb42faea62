"""How often tools are resolved (issue 17): a static tool set once per spec or client, however many
requests run it; a dynamic provider once per request, however many rounds the loop takes.

Resolutions are counted with spies: an object whose ``@tool`` methods are looked up on it each time
it is resolved into callbacks, and providers that count how often they are asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ChatClientResponse, Prompt, ToolResponseMessage, tool
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import FunctionToolCallback, ToolCallback

ROUNDS = 3
"""Tool rounds per request: the model calls a tool this many times, then answers."""
FINAL = "done"


class SpyToolbox:
    """Tools as ``@tool`` methods; counts each time the instance is turned into callbacks (resolving
    looks up every tool method on the instance, which a run of a resolved callback never does)."""

    def __init__(self) -> None:
        self.resolutions = 0
        self.runs = 0

    def __getattribute__(self, name: str) -> Any:
        if name == "forecast":
            object.__setattr__(self, "resolutions", object.__getattribute__(self, "resolutions") + 1)
        return object.__getattribute__(self, name)

    @tool(description="Forecast for a city")
    def forecast(self, city: str, days: int) -> str:
        self.runs += 1
        return f"{city}: sunny for {days} days"


def looping(tool_name: str) -> Any:
    """A script: call ``tool_name`` ``ROUNDS`` times (other arguments each round), then answer."""

    def script(prompt: Prompt) -> ScriptItem:
        done = sum(isinstance(m, ToolResponseMessage) for m in prompt.messages)
        if done >= ROUNDS:
            return FINAL
        return AssistantMessage(None, tool_calls=[tool_call(tool_name, {"city": "Paris", "days": done + 1})])

    return script


def text(response: ChatClientResponse) -> str | None:
    return response.chat_response.text if response.chat_response is not None else None


def tool_names(prompt: Prompt) -> list[str]:
    return [callback.name for callback in prompt.tool_callbacks]


# ------------------------------------------------------------------------------------------ static tools


@pytest.mark.parametrize("mode", MODES)
def test_tools_given_to_a_spec_are_resolved_once_for_all_its_requests(mode: str) -> None:
    spy = SpyToolbox()
    model = ScriptedChatModel(looping("forecast"))
    spec = ChatClient.create(model).prompt().tools(spy)
    assert spy.resolutions == 1
    branches = [spec.user(f"Weather {i}?") for i in range(3)]
    for branch in branches:
        response, _ = run_spec(mode, branch)
        assert text(response) == FINAL
    assert spy.runs == 3 * ROUNDS, "every round ran the tool"
    assert spy.resolutions == 1, "neither the branches nor their requests nor their rounds resolved it again"


@pytest.mark.parametrize("mode", MODES)
def test_client_default_tools_are_resolved_once_when_the_client_is_built(mode: str) -> None:
    spy = SpyToolbox()
    model = ScriptedChatModel(looping("forecast"))
    client = ChatClient.builder(model).default_tools(spy).build()
    assert spy.resolutions == 1
    for i in range(3):
        response, _ = run_spec(mode, client.prompt(f"Weather {i}?"))
        assert text(response) == FINAL
    extra = FunctionToolCallback.builder("extra", lambda: "x").build()
    response, _ = run_spec(mode, client.prompt("With one more tool").tools(extra))
    assert text(response) == FINAL
    assert tool_names(model.prompts[-1]) == ["forecast", "extra"]
    assert spy.runs == 4 * ROUNDS
    assert spy.resolutions == 1, "a request adding its own tools does not resolve the defaults again"


# ------------------------------------------------------------------------------------------ dynamic tools


class SyncProvider:
    def __init__(self) -> None:
        self.asked = 0
        self.spy = SpyToolbox()

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        self.asked += 1
        return [FunctionToolCallback.builder("provided", self._run).description("A provided tool").build()]

    def _run(self, city: str, days: int) -> str:
        self.spy.runs += 1
        return f"{city}: {days}"


class AsyncProvider(SyncProvider):
    async def tool_callbacks(self) -> Sequence[ToolCallback]:  # type: ignore[override]
        await asyncio.sleep(0)
        return SyncProvider.tool_callbacks(self)


PROVIDERS = {"sync provider": SyncProvider, "async provider": AsyncProvider}


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("mode", MODES)
def test_a_provider_on_a_spec_is_asked_once_per_request(mode: str, kind: str) -> None:
    provider = PROVIDERS[kind]()
    model = ScriptedChatModel(looping("provided"))
    spec = ChatClient.create(model).prompt("Weather?").tools(provider)
    assert provider.asked == 0, "asked when a request runs, not when the spec is built"
    for request in range(1, 3):
        response, _ = run_spec(mode, spec)
        assert text(response) == FINAL
        assert provider.asked == request, f"{ROUNDS} rounds, one ask"
    assert provider.spy.runs == 2 * ROUNDS
    assert all(tool_names(prompt) == ["provided"] for prompt in model.prompts), "every round offers its tools"


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("mode", MODES)
def test_a_default_provider_is_asked_once_per_request_and_the_static_tools_never_again(mode: str, kind: str) -> None:
    provider = PROVIDERS[kind]()
    spy = SpyToolbox()
    model = ScriptedChatModel(looping("provided"))
    client = ChatClient.builder(model).default_tools(spy, provider).build()
    assert (spy.resolutions, provider.asked) == (1, 0)
    for request in range(1, 3):
        response, _ = run_spec(mode, client.prompt("Weather?"))
        assert text(response) == FINAL
        assert provider.asked == request
    assert all(tool_names(prompt) == ["forecast", "provided"] for prompt in model.prompts)
    assert spy.resolutions == 1
