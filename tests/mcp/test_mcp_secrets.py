"""Nothing secret in what an MCP connection shows: its repr masks credential-looking header values,
every value of a stdio child's environment and a URL's password and secret query parameters, and
the log lines of its traffic (the SDK's, httpx2's) mask the URL's. One marker secret, swept."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from chatclient.mcp import McpServerConnection, McpToolCallbackProvider
from chatclient.testing.mcp import running_mcp_server

from .servers import demo_server

MARKER = "sk-MARKER-5f3a9"
CONNECTIONS = {
    "http headers": lambda: McpServerConnection.http(
        "http://127.0.0.1:8000/mcp",
        name="h",
        headers={"Authorization": f"Bearer {MARKER}", "api-key": MARKER, "X-Auth-Token": MARKER, "Cookie": MARKER},
    ),
    "url password": lambda: McpServerConnection.http(f"https://me:{MARKER}@mcp.example.com/mcp", name="u"),
    "url query": lambda: McpServerConnection.http(f"https://mcp.example.com/mcp?api_key={MARKER}&v=2", name="q"),
    "stdio env": lambda: McpServerConnection.stdio(
        "server", ["--flag"], name="s", env={"GITHUB_TOKEN": MARKER, "DATABASE": f"postgres://u:{MARKER}@db/x"}
    ),
}


@pytest.mark.parametrize("make", CONNECTIONS.values(), ids=CONNECTIONS.keys())
def test_a_connection_shows_no_credential(make: object) -> None:
    connection = make()  # type: ignore[operator]
    for shown in (repr(connection), str(connection), repr([connection]), f"{connection!r}"):
        assert MARKER not in shown
    assert "[secure]" in repr(connection), "masked, not dropped: a reader sees a credential was there"


def test_what_is_not_a_credential_still_shows() -> None:
    connection = McpServerConnection.http(
        "https://mcp.example.com/mcp?region=eu", name="w", headers={"X-Team": "blue", "Authorization": MARKER}
    )
    shown = repr(connection)
    assert "'X-Team': 'blue'" in shown and "'Authorization': '[secure]'" in shown
    assert "url='https://mcp.example.com/mcp?region=eu'" in shown
    stdio = repr(McpServerConnection.stdio("server", ["--flag"], name="s", env={"HOME_DIR": "/x"}))
    assert "command='server'" in stdio and "args=('--flag',)" in stdio and "'HOME_DIR': '[secure]'" in stdio


def test_the_log_of_a_request_shows_no_credential_of_its_url(caplog: pytest.LogCaptureFixture) -> None:
    calls: Counter[str] = Counter()
    with running_mcp_server(demo_server(calls=calls)) as url, caplog.at_level(logging.DEBUG):
        connection = McpServerConnection.http(f"{url}?token={MARKER}", name="demo", headers={"Authorization": MARKER})
        with McpToolCallbackProvider(connection) as provider:
            add = next(t for t in provider.get_tool_callbacks() if t.name == "add")
            assert add.call('{"a": 1, "b": 2}').text == "3"  # type: ignore[union-attr]
    assert calls["add"] == 1
    assert "token=[secure]" in caplog.text, "the URLs were logged: the check below is not vacuous"
    assert MARKER not in caplog.text
