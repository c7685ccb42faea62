"""``SimpleLoggerAdvisor`` and ``SafeGuardAdvisor``, each in all four modes."""

from __future__ import annotations

import logging

import pytest

from advisors import SafeGuardAdvisor, SimpleLoggerAdvisor
from chatclient import FinishReason
from chatclient.events import TextDelta, TurnFinished
from chatclient.testing import check_advisor


def test_the_logger_logs_request_and_response_at_debug_in_every_mode(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="chatclient.advisors"):
        runs = check_advisor(lambda: SimpleLoggerAdvisor(), ["Hi there!"], user="Hello", system="Be brief")
    assert runs["call"].text == "Hi there!"
    messages = [r.getMessage() for r in caplog.records if r.name == "chatclient.advisors"]
    assert len(messages) == 8  # a request and a response per mode
    assert messages[:2] == [
        "request: SystemMessage: Be brief\nUserMessage: Hello",
        "response: Hi there! (finish stop)",
    ]
    assert all(r.levelno == logging.DEBUG for r in caplog.records if r.name == "chatclient.advisors")


def test_the_logger_redacts_and_stays_quiet_above_debug(caplog: pytest.LogCaptureFixture) -> None:
    def redact(text: str) -> str:
        return text.replace("sk-secret", "***")

    with caplog.at_level(logging.DEBUG, logger="chatclient.advisors"):
        check_advisor(lambda: SimpleLoggerAdvisor(redact=redact), ["key sk-secret noted"], user="my key is sk-secret")
    assert "sk-secret" not in caplog.text and "***" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="chatclient"):
        check_advisor(lambda: SimpleLoggerAdvisor(), ["Hi"])
    assert caplog.records == []


def test_the_safeguard_answers_a_sensitive_request_without_the_model_in_every_mode() -> None:
    runs = check_advisor(lambda: SafeGuardAdvisor(["password"], reply="Not here."), ["never sent"], user="My PASSWORD?")
    for mode, run in runs.items():
        assert run.prompts == [], mode  # the model was never called
        assert run.text == "Not here."
        chat = run.response.chat_response
        assert chat is not None and chat.generations[0].finish_reason is FinishReason.CONTENT_FILTER
    for mode in ("stream", "astream"):
        events = runs[mode].events
        assert [type(e) for e in events] == [TextDelta, TurnFinished]
        assert isinstance(events[0], TextDelta) and events[0].text == "Not here."


def test_the_safeguard_lets_other_requests_through_in_every_mode() -> None:
    runs = check_advisor(lambda: SafeGuardAdvisor(["password", "ssn"]), ["Hello!"], user="Passwords are fun? no: pass")
    assert all(len(run.prompts) == 1 and run.text == "Hello!" for run in runs.values())
