"""docs/mcp.md's "MCP in ten lines" runs as written: the server block builds the server that ``serve``
would run (``serve`` itself is caught, so the test binds a random loopback port rather than 8000),
and the client block, pointed at that server, gets the tool's answer through the chat loop."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import chatclient.mcp
from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.testing import ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.mcp import running_mcp_server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
DOCUMENTED_URL = "http://127.0.0.1:8000/mcp"


def mcp_snippets() -> list[str]:
    section = PAGE.read_text().split("## MCP in ten lines", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python[^\n]*\n(.*?)```", section, flags=re.DOTALL)


def ask_forecast(prompt: Prompt) -> ScriptItem:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        response = last.responses[0]
        return f"error: {response.response_data}" if response.is_error else response.response_data
    return AssistantMessage(None, tool_calls=[tool_call("forecast", {"city": "Paris"})])


def test_the_documented_mcp_snippets_run_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server_code, client_code = mcp_snippets()
    served: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(chatclient.mcp, "serve", lambda server, **options: served.append((server, options)))
    exec(compile(server_code, "docs/mcp.md (MCP server)", "exec"), {"__name__": "weather_server"})
    ((server, options),) = served
    defaults = inspect.signature(chatclient.mcp.server.serve).parameters
    assert options == {} and (defaults["host"].default, defaults["port"].default, defaults["path"].default) == (
        "127.0.0.1",
        8000,
        "/mcp",
    ), "the comment's address is serve()'s default"

    assert DOCUMENTED_URL in client_code
    model = ScriptedChatModel(ask_forecast)
    with running_mcp_server(server) as url:
        code = client_code.replace(DOCUMENTED_URL, url)
        exec(compile(code, "docs/mcp.md (MCP client)", "exec"), {"client": ChatClient.create(model)})
    assert capsys.readouterr().out == "Sunny in Paris tomorrow\n"
    assert model.calls == 2
