"""The two gates of the observer seam that make tracing free when nothing records: an inactive
observer is never called (the request runs as unobserved), and a call whose every observer returned
``QUIET`` from ``call_started`` runs unobserved past that point, in every mode."""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.observation import QUIET, CallInfo, ChatObserver, Observers
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tracing import OpenTelemetryObserver


class Recorder(ChatObserver):
    def __init__(self, *, active: bool = True, quiet: bool = False) -> None:
        self.active, self.quiet = active, quiet
        self.points: list[str] = []

    def is_active(self) -> bool:
        return self.active

    def call_started(self, info: CallInfo) -> Any:
        self.points.append("call")
        return QUIET if self.quiet else None

    def call_finished(self, token: Any, info: CallInfo, response: Any, error: Any) -> None:
        self.points.append("call end")

    def advisor_started(self, info: Any) -> Any:
        self.points.append(f"advisor {info.name}")

    def model_started(self, info: Any) -> Any:
        self.points.append("model")

    def tool_started(self, info: Any) -> Any:
        self.points.append(f"tool {info.name}")


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def _turn(mode: str, *observers: ChatObserver) -> None:
    model = ScriptedChatModel([AssistantMessage(None, tool_calls=[tool_call("echo", {"text": "a"}, id="e1")]), "ok"])
    client = ChatClient.builder(model).default_tools(echo).observers(*observers).build()
    response, _ = run_spec(mode, client.prompt("go"))
    assert response.text == "ok"


@pytest.mark.parametrize("mode", MODES)
def test_an_inactive_observer_is_never_called(mode: str) -> None:
    idle = Recorder(active=False)
    _turn(mode, idle)
    assert idle.points == []
    assert not Observers((idle,)) and Observers((idle, Recorder()))


@pytest.mark.parametrize("mode", MODES)
def test_a_quiet_call_skips_every_later_point_and_the_next_call_is_observed(mode: str) -> None:
    quiet, loud = Recorder(quiet=True), Recorder()
    _turn(mode, quiet)
    assert quiet.points == ["call"]  # no call_finished for a QUIET token either
    _turn(mode, loud)
    assert loud.points == ["call", "advisor ToolCallingAdvisor", "model", "tool echo", "model", "call end"]


@pytest.mark.parametrize("mode", MODES)
def test_one_observer_that_is_not_quiet_keeps_the_call_observed(mode: str) -> None:
    quiet, loud = Recorder(quiet=True), Recorder()
    _turn(mode, quiet, loud)
    assert loud.points == ["call", "advisor ToolCallingAdvisor", "model", "tool echo", "model", "call end"]
    assert quiet.points[:2] == ["call", "advisor ToolCallingAdvisor"] and "call end" not in quiet.points


def test_the_tracing_observer_is_inactive_until_a_provider_is_configured() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    assert OpenTelemetryObserver().is_active() is False  # this process sets no global provider
    assert OpenTelemetryObserver(tracer_provider=TracerProvider()).is_active() is True
    assert OpenTelemetryObserver(meter_provider=MeterProvider()).is_active() is True
