"""Retries and deadline hits log at INFO on ``chatclient.providers``, each once, a deadline hit in
the middle of a stream too; and a deadline hit is an error on the ``chat`` span."""

from __future__ import annotations

import logging

import pytest

from chatclient import ChatClient
from chatclient.errors import APITimeoutError
from chatclient.testing.advisor_kit import run_spec
from providers.openai import OpenAIChatModel

from ..providers.stalling_server import stalling_server
from .conftest import Otel


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_a_deadline_hit_while_a_stream_is_read_is_logged_once_and_traced(
    otel: Otel, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    caplog.set_level(logging.INFO, logger="chatclient.providers")
    with stalling_server() as server, OpenAIChatModel(base_url=f"{server.url}/trickle", api_key="k") as model:
        spec = ChatClient.builder(model).observers(otel.observer()).build().prompt("hi").timeout(0.4)
        with pytest.raises(APITimeoutError):
            run_spec(mode, spec)
    logged = [r for r in caplog.records if r.name == "chatclient.providers" and "deadline of 0.4 s" in r.getMessage()]
    assert [r.levelno for r in logged] == [logging.INFO]
    [chat] = [s for s in otel.spans() if s.name.startswith("chat")]
    assert chat.status.status_code.name == "ERROR"
    assert dict(chat.attributes or {})["error.type"] == "chatclient.errors.DeadlineExceeded"
