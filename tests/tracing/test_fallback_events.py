"""A fall back to the next model of a ``FallbackChatModel`` is an event on the round's chat span."""

from __future__ import annotations

import pytest

from chatclient import ChatClient
from chatclient.errors import OverloadedError, RateLimitError
from chatclient.options import ChatOptions
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec
from providers.fallback import FallbackChatModel

from .conftest import Otel


@pytest.mark.parametrize("mode", MODES)
def test_each_fall_back_is_an_event_on_the_chat_span(otel: Otel, mode: str) -> None:
    model = FallbackChatModel(
        ScriptedChatModel([RateLimitError("slow down", provider="a")]),
        ScriptedChatModel([OverloadedError("busy", provider="b")], default_options=ChatOptions(model="second")),
        ScriptedChatModel(["third answers"], default_options=ChatOptions(model="third")),
    )
    client = ChatClient.builder(model).observers(otel.observer()).build()
    response, _ = run_spec(mode, client.prompt("hi"))
    assert response.text == "third answers"
    [chat] = [s for s in otel.spans() if s.name.startswith("chat")]
    events = [(e.name, dict(e.attributes or {})) for e in chat.events if e.name == "chatclient.request.fallback"]
    assert events == [
        (
            "chatclient.request.fallback",
            {
                "error.type": "chatclient.errors.RateLimitError",
                "chatclient.fallback.position": 1,
                "chatclient.fallback.model": "ScriptedChatModel(second)",
            },
        ),
        (
            "chatclient.request.fallback",
            {
                "error.type": "chatclient.errors.OverloadedError",
                "chatclient.fallback.position": 2,
                "chatclient.fallback.model": "ScriptedChatModel(third)",
            },
        ),
    ]
