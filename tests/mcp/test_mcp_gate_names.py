"""A gate by name holds whichever name of an MCP tool it is given (the exposed one the model and the
pending state show, or the tool's own name on the server), under every naming, in every place a name
is configured; a name that matches no tool is reported. A real server on 127.0.0.1, counted
server-side: a gated call that reached the server would show in the count."""

from __future__ import annotations

import asyncio
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import AsyncMcpToolCallbackProvider, McpServerConnection, McpToolCallbackProvider, McpToolNaming
from chatclient.testing import ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.mcp import running_mcp_server
from chatclient.tools import (
    ConfirmationSettings,
    ToolCallConfirmationPolicy,
    ToolCallingManager,
    UnmatchedToolNameWarning,
    awaiting_decision,
)

SERVER = "ops"
LONG = "purge_" + "x" * 70
TOOLS = ("delete.city", "wipe", LONG, "lookup")
"""A dotted name (sanitised and hashed when exposed), a plain one, one over 64 characters (cut and
hashed), and one nobody gates."""
NAMINGS = {"as_is": McpToolNaming.as_is(), "server_prefix": McpToolNaming.server_prefix()}
PLACES = ("provider", "by_tool_names", "environment")


def ops_server(calls: Counter[str]) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER, log_level="WARNING")
    for name in TOOLS:

        def run(target: str, name: str = name) -> str:
            calls[name] += 1
            return f"{name} {target} done"

        server.add_tool(run, name=name, description=f"{name} a target")
    return server


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Counter[str], str]]:
    calls: Counter[str] = Counter()
    with running_mcp_server(ops_server(calls)) as url:
        yield calls, url


@pytest.fixture
def calls_and_url(served: tuple[Counter[str], str]) -> tuple[Counter[str], str]:
    served[0].clear()
    return served


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Sets CHATCLIENT_TOOL_CONFIRMATION_TOOLS for the clients built afterwards (read once per process)."""

    def set_tools(value: str) -> None:
        monkeypatch.setenv(ConfirmationSettings.TOOLS_ENV, value)
        ConfirmationSettings.from_env.cache_clear()

    yield set_tools
    monkeypatch.delenv(ConfirmationSettings.TOOLS_ENV, raising=False)
    ConfirmationSettings.from_env.cache_clear()


def exposed(naming: str, original: str) -> str:
    return NAMINGS[naming](SERVER, original)


def calling_every_tool(naming: str) -> Callable[[Prompt], ScriptItem]:
    """One reply calling each tool by its exposed name (call ids: the original names)."""

    def script(prompt: Prompt) -> ScriptItem:
        if isinstance(prompt.messages[-1], ToolResponseMessage):
            return "done"
        return AssistantMessage(
            None, tool_calls=[tool_call(exposed(naming, name), {"target": "x"}, id=name) for name in TOOLS]
        )

    return script


def client_gating(
    place: str, name: str, naming: str, url: str, environment: Callable[[str], None]
) -> tuple[ChatClient, McpToolCallbackProvider]:
    """A client whose only gate is ``name``, configured in ``place``."""
    connection = McpServerConnection.http(url, name=SERVER)
    provider = McpToolCallbackProvider(
        connection, naming=NAMINGS[naming], require_confirmation={name} if place == "provider" else None
    )
    if place == "environment":
        environment(f"unrelated_a, {name}")
    builder = ChatClient.builder(ScriptedChatModel(calling_every_tool(naming))).default_tools(provider)
    if place == "by_tool_names":
        policy = ToolCallConfirmationPolicy.by_tool_names(name)
        builder = builder.tool_calling_advisor(
            ToolCallingAdvisor(ToolCallingManager.builder().tool_call_confirmation_policy(policy).build())
        )
    return builder.build(), provider


def test_the_namings_give_the_names_the_matrix_expects() -> None:
    assert re.fullmatch(r"delete_city_[0-9a-f]{8}", exposed("as_is", "delete.city"))
    assert re.fullmatch(r"ops_delete_city_[0-9a-f]{8}", exposed("server_prefix", "delete.city"))
    assert (exposed("as_is", "wipe"), exposed("server_prefix", "wipe")) == ("wipe", "ops_wipe")
    assert re.fullmatch(r"(ops_)?purge_x+_[0-9a-f]{8}", exposed("server_prefix", LONG))
    assert len(exposed("as_is", LONG)) == len(exposed("server_prefix", LONG)) == 64


@pytest.mark.parametrize("spelling", ["exposed", "original"])
@pytest.mark.parametrize("gated", ["delete.city", "wipe", LONG], ids=["dotted", "plain", "long"])
@pytest.mark.parametrize("naming", NAMINGS)
@pytest.mark.parametrize("place", PLACES)
def test_a_gate_holds_under_either_name(
    place: str,
    naming: str,
    gated: str,
    spelling: str,
    calls_and_url: tuple[Counter[str], str],
    environment: Callable[[str], None],
) -> None:
    calls, url = calls_and_url
    name = exposed(naming, gated) if spelling == "exposed" else gated
    client, provider = client_gating(place, name, naming, url, environment)
    with provider, warnings.catch_warnings():
        warnings.filterwarnings("ignore", r".*\['unrelated_a'\]", UnmatchedToolNameWarning)  # the env's other name
        pending = awaiting_decision(client.prompt("Do it").call().chat_client_response())
    assert pending is not None, f"{name!r} in {place} did not gate {exposed(naming, gated)!r}"
    assert pending.awaiting_ids == [gated], "only the gated call waits"
    assert [call.name for call in pending.calls if call.requires_confirmation] == [exposed(naming, gated)]
    assert calls == {}, "nothing reached the server before the decisions"


@pytest.mark.parametrize("naming", NAMINGS)
def test_the_provider_reports_a_gated_name_no_listed_tool_has_when_it_lists(
    naming: str, calls_and_url: tuple[Counter[str], str]
) -> None:
    _, url = calls_and_url
    wrong = {"delete_city", exposed(naming, "wipe"), "delete.city"}  # the sanitised stem without its hash
    provider = McpToolCallbackProvider(
        McpServerConnection.http(url, name=SERVER), naming=NAMINGS[naming], require_confirmation=wrong
    )
    with (
        provider,
        pytest.warns(UnmatchedToolNameWarning, match=r"require_confirmation names \['delete_city'\]") as seen,
    ):
        tools = provider.get_tool_callbacks()
    assert len(seen) == 1, "the names that match are not reported"
    assert {t.name for t in tools if t.metadata.requires_confirmation} == {
        exposed(naming, "delete.city"),
        exposed(naming, "wipe"),
    }


def test_a_tool_left_out_by_the_filter_is_not_an_unmatched_name(calls_and_url: tuple[Counter[str], str]) -> None:
    _, url = calls_and_url
    provider = McpToolCallbackProvider(
        McpServerConnection.http(url, name=SERVER),
        tool_filter=lambda server, tool: tool.name != "wipe",
        require_confirmation="wipe",  # one name, not the characters w, i, p, e
    )
    with provider, warnings.catch_warnings():
        warnings.simplefilter("error")
        tools = provider.get_tool_callbacks()
    assert sorted(t.name for t in tools) == sorted([exposed("as_is", "delete.city"), exposed("as_is", LONG), "lookup"])
    assert not any(t.metadata.requires_confirmation for t in tools)


@pytest.mark.parametrize("place", ["by_tool_names", "environment"])
def test_a_policy_reports_a_gated_name_no_tool_of_the_request_has(
    place: str, calls_and_url: tuple[Counter[str], str], environment: Callable[[str], None]
) -> None:
    calls, url = calls_and_url
    client, provider = client_gating(place, "delete_city", "as_is", url, environment)
    with provider, pytest.warns(UnmatchedToolNameWarning, match="'delete_city'") as seen:
        response = client.prompt("Do it").call().chat_client_response()
    source = ConfirmationSettings.TOOLS_ENV if place == "environment" else "by_tool_names('delete_city')"
    assert any(source in str(w.message) for w in seen)
    assert awaiting_decision(response) is None
    assert calls == dict.fromkeys(TOOLS, 1), "a name that matches nothing gates nothing"


def test_a_server_name_shared_by_two_servers_gates_the_tool_of_each(calls_and_url: tuple[Counter[str], str]) -> None:
    """Under server_prefix a bare original name is ambiguous: it gates every server's tool of that
    name (more gates, never fewer); the exposed name picks one."""
    calls, url = calls_and_url
    connections = [McpServerConnection.http(url, name=SERVER), McpServerConnection.http(url, name="ops2")]
    with McpToolCallbackProvider(*connections, naming=McpToolNaming.server_prefix()) as provider:
        tools = {t.name: t for t in provider.get_tool_callbacks()}
        policy = ToolCallConfirmationPolicy.by_tool_names("wipe")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            policy.check_tool_names(tools.values())
        gated = {name for name, tool in tools.items() if policy.requires_confirmation(_call(name), tool)}
        exact = ToolCallConfirmationPolicy.by_tool_names("ops2_wipe")
        picked = {name for name, tool in tools.items() if exact.requires_confirmation(_call(name), tool)}
    assert gated == {"ops_wipe", "ops2_wipe"}
    assert picked == {"ops2_wipe"}
    assert calls == {}


def _call(name: str) -> Any:
    from chatclient.messages import ToolCall

    return ToolCall(id="c", name=name, arguments="{}")


@pytest.mark.parametrize("spelling", ["exposed", "original"])
def test_the_async_provider_gates_by_either_name_too(spelling: str, calls_and_url: tuple[Counter[str], str]) -> None:
    calls, url = calls_and_url
    naming = "server_prefix"
    name = exposed(naming, "delete.city") if spelling == "exposed" else "delete.city"

    async def paused() -> Any:
        async with AsyncMcpToolCallbackProvider(
            McpServerConnection.http(url, name=SERVER), naming=NAMINGS[naming], require_confirmation={name}
        ) as provider:
            client = ChatClient.builder(ScriptedChatModel(calling_every_tool(naming))).default_tools(provider).build()
            return awaiting_decision(await client.prompt("Do it").acall().chat_client_response())

    pending = asyncio.run(paused())
    assert pending is not None and pending.awaiting_ids == ["delete.city"]
    assert calls == {}
