"""The ``chatclient`` loggers: silent by default, a WARNING with the traceback when a tool raises,
INFO for a pause (retries and deadline hits log at INFO in ``providers._retry``)."""

from __future__ import annotations

import logging

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCall, tool
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec


def _calls(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=calls)


class Tools:
    @tool(description="Always fails")
    def broken(self, city: str) -> str:
        raise RuntimeError(f"no data for {city}")

    @tool(description="Book a flight", requires_confirmation=True)
    def book(self, flight: str) -> str:
        return f"Booked {flight}"


def test_the_package_logger_has_a_null_handler_and_no_level_of_its_own() -> None:
    root = logging.getLogger("chatclient")
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    assert root.level == logging.NOTSET  # the application's configuration decides
    assert logging.getLogger("chatclient.tools").parent is root


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_that_raises_logs_a_warning_with_the_traceback_and_the_model_still_hears(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel([_calls(tool_call("broken", {"city": "Paris"}, id="c1")), "Sorry, no data."])
    spec = ChatClient.create(model).prompt("Weather?").tools(Tools())
    with caplog.at_level(logging.INFO, logger="chatclient"):
        final, _ = run_spec(mode, spec)
    assert final.text == "Sorry, no data."
    told = model.prompts[1].messages[-1]
    assert "no data for Paris" in str(told.model_dump())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    record = warnings[0]
    assert record.name == "chatclient.tools"
    assert "'broken'" in record.getMessage() and "c1" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
    assert "raise RuntimeError" in caplog.text  # the traceback is in the formatted record


@pytest.mark.parametrize("mode", MODES)
def test_a_pause_logs_at_info(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedChatModel([_calls(tool_call("book", {"flight": "VX205"}, id="b1"))])
    spec = ChatClient.create(model).prompt("Book VX205").tools(Tools())
    with caplog.at_level(logging.DEBUG, logger="chatclient"):
        final, _ = run_spec(mode, spec)
    assert final.is_paused
    infos = [r for r in caplog.records if r.name == "chatclient.tools" and r.levelno == logging.INFO]
    assert [r.getMessage() for r in infos] == ["Tool calls await a decision: b1"]


def test_nothing_reaches_the_last_resort_handler_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Python prints WARNINGs of unconfigured loggers to stderr; the NullHandler keeps a library quiet."""
    model = ScriptedChatModel([_calls(tool_call("broken", {"city": "Oslo"})), "No data."])
    ChatClient.create(model).prompt("Weather?").tools(Tools()).call().content()
    assert capsys.readouterr().err == ""
