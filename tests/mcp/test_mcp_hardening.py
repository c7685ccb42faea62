"""What a server cannot make the client do: offer a tool whose schema every provider rejects, fill
the next prompt with an unbounded result, or make two tools share a name by sanitising. Low-level
SDK servers (they send whatever they are given) on 127.0.0.1 and in process; no mock of MCP."""

from __future__ import annotations

import base64
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, Prompt, ToolResponseMessage
from chatclient.mcp import (
    AsyncMcpToolCallbackProvider,
    McpServerConnection,
    McpToolCallbackProvider,
    McpToolNaming,
    McpUnsafeWarning,
    sanitise_name,
)
from chatclient.messages import ImagePart, TextPart, ToolResponse
from chatclient.testing import MODES, ScriptedChatModel, ScriptItem, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.testing.mcp import running_mcp_server
from chatclient.tools._json_schema import input_schema_problem

GOOD: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
BAD: dict[str, dict[str, Any]] = {
    "props_not_object": {"type": "object", "properties": 5},
    "required_not_list": {"type": "object", "properties": {"n": {}}, "required": "n"},
    "unknown_type": {"type": "object", "properties": {"n": {"type": "strang"}}},
}
HUGE_CHARS = 250_000
PIXELS = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"p" * 3000).decode()


def low_level_server(tools: dict[str, dict[str, Any]], calls: Counter[str]) -> Any:
    """Lists ``tools`` (name -> input schema) as given; ``huge`` answers 250,000 characters,
    ``pixels`` text and a 3 kB image, anything else its name."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, description=name, input_schema=schema) for name, schema in tools.items()]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        calls[params.name] += 1
        if params.name == "huge":
            return types.CallToolResult(content=[types.TextContent(type="text", text="y" * HUGE_CHARS)])
        if params.name == "pixels":
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text="a chart:"),
                    types.ImageContent(type="image", data=PIXELS, mime_type="image/png"),
                ]
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    return Server("low", on_list_tools=list_tools, on_call_tool=call_tool)


def calling(name: str, arguments: dict[str, Any] | None = None) -> Any:
    def script(prompt: Prompt) -> ScriptItem:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return f"{len(last.responses[0].response_data)} characters"
        return AssistantMessage(None, tool_calls=[tool_call(name, arguments or {})])

    return script


def tool_response(model: ScriptedChatModel) -> ToolResponse:
    message = model.prompts[-1].messages[-1]
    assert isinstance(message, ToolResponseMessage)
    return message.responses[0]


CALLS: Counter[str] = Counter()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    tools: dict[str, dict[str, Any]] = {"ok": GOOD, **BAD, "huge": {"type": "object"}, "pixels": {"type": "object"}}
    with running_mcp_server(low_level_server(tools, CALLS)) as served:
        yield served


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


# ----------------------------------------------------------------------------------------- input schemas


def test_the_schema_checker_names_what_is_wrong() -> None:
    assert input_schema_problem(GOOD) is None
    assert input_schema_problem({}) is None, "no type: an object (the callback adds it)"
    assert input_schema_problem(BAD["props_not_object"]) == "properties: 5 is not of type 'object'"
    assert input_schema_problem(BAD["required_not_list"]) == "required: 'n' is not of type 'array'"
    problem = input_schema_problem(BAD["unknown_type"])
    assert problem is not None and problem.startswith("properties.n.type: 'strang' is not valid")
    assert input_schema_problem({"type": "string"}) is not None
    assert input_schema_problem([1]) == "the input schema is a list, not a JSON object"


def listed_with_warnings(provider: McpToolCallbackProvider) -> tuple[list[str], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = sorted(c.name for c in provider.get_tool_callbacks())
    return names, [str(w.message) for w in caught if issubclass(w.category, McpUnsafeWarning)]


def test_a_tool_with_an_invalid_schema_is_left_out_with_one_warning_naming_server_tool_and_problem(url: str) -> None:
    with McpToolCallbackProvider(McpServerConnection.http(url, name="low")) as provider:
        names, messages = listed_with_warnings(provider)
    assert names == ["huge", "ok", "pixels"]
    assert len(messages) == 3
    for name, message in zip(sorted(BAD), sorted(messages), strict=True):
        assert message.startswith(f"MCP tool {name!r} of server 'low' is left out: its input schema is invalid (")
    assert any("properties: 5 is not of type 'object'" in m for m in messages)


@pytest.mark.parametrize("mode", MODES)
def test_the_other_tools_stay_usable_in_every_mode(mode: str, url: str) -> None:
    connection = McpServerConnection.http(url, name="low")
    with McpToolCallbackProvider(connection) as provider, warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        model = ScriptedChatModel(calling("ok", {"n": 1}))
        final, _ = run_spec(mode, ChatClient.create(model).prompt("x").tools(provider))
    assert final.chat_response is not None and final.chat_response.text == "9 characters"
    assert tool_response(model).response_data == "called ok"
    assert sorted(c.name for c in model.prompts[0].tool_callbacks) == ["huge", "ok", "pixels"]
    assert CALLS == {"ok": 1}


async def test_the_async_provider_leaves_them_out_too(url: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with AsyncMcpToolCallbackProvider(McpServerConnection.http(url, name="low")) as provider:
            names = sorted(c.name for c in await provider.tool_callbacks())
    assert names == ["huge", "ok", "pixels"]
    assert sorted(str(w.message).split("'")[1] for w in caught if w.category is McpUnsafeWarning) == sorted(BAD)


# ----------------------------------------------------------------------------------------- result size


@pytest.mark.parametrize("mode", MODES)
def test_a_huge_text_result_is_cut_with_a_marker_and_its_size_kept(mode: str, url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        with McpToolCallbackProvider(McpServerConnection.http(url, name="low")) as provider:
            model = ScriptedChatModel(calling("huge"))
            run_spec(mode, ChatClient.create(model).prompt("x").tools(provider))
    response = tool_response(model)
    (part,) = response.parts
    assert isinstance(part, TextPart)
    assert part.text.startswith("y" * 100_000 + "\n[... 150,000 of 250,000 characters cut: ")
    assert "100,000-character limit" in part.text and len(part.text) < 100_200
    assert response.result_metadata["result_cut"] == {"text_chars": 250_000, "text_chars_kept": 100_000}
    assert response.result_metadata["mcp_tool"] == "huge"


def test_the_limit_is_an_option_and_none_lifts_it(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        with McpToolCallbackProvider(McpServerConnection.http(url, name="low"), max_result_chars=None) as provider:
            (huge,) = [c for c in provider.get_tool_callbacks() if c.name == "huge"]
            whole = huge.call("{}")
        with McpToolCallbackProvider(McpServerConnection.http(url, name="low"), max_result_chars=4) as provider:
            (ok,) = [c for c in provider.get_tool_callbacks() if c.name == "ok"]
            cut = ok.call('{"n": 1}')
    assert not isinstance(whole, str) and whole.text == "y" * HUGE_CHARS and "result_cut" not in whole.metadata
    assert not isinstance(cut, str) and cut.text.startswith("call\n[... 5 of 9 characters cut")
    with pytest.raises(ValueError, match="max_chars must be a non-negative int or None"):
        McpToolCallbackProvider(McpServerConnection.http(url, name="low"), max_result_chars=-1)


def test_an_image_over_the_byte_limit_is_replaced_by_a_note(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        connection = McpServerConnection.http(url, name="low")
        with McpToolCallbackProvider(connection, max_result_media_bytes=1000) as provider:
            (pixels,) = [c for c in provider.get_tool_callbacks() if c.name == "pixels"]
            dropped = pixels.call("{}")
        with McpToolCallbackProvider(connection) as provider:
            (pixels,) = [c for c in provider.get_tool_callbacks() if c.name == "pixels"]
            kept = pixels.call("{}")
    assert not isinstance(dropped, str) and not isinstance(kept, str)
    assert isinstance(kept.parts[1], ImagePart) and "result_cut" not in kept.metadata
    note = dropped.parts[1]
    assert isinstance(note, TextPart)
    assert note.text == (
        "[image (image/png, 3,008 bytes) left out: over the 1,000-byte limit for media in MCP tool results]"
    )
    assert dropped.metadata["result_cut"] == {
        "text_chars": 8,
        "media_dropped": [{"kind": "image", "media_type": "image/png", "bytes": 3008}],
    }


async def test_the_async_provider_cuts_the_same_way(url: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        async with AsyncMcpToolCallbackProvider(McpServerConnection.http(url, name="low")) as provider:
            (huge,) = [c for c in await provider.tool_callbacks() if c.name == "huge"]
            result = await huge.acall("{}")
    assert not isinstance(result, str)
    assert result.metadata["result_cut"] == {"text_chars": 250_000, "text_chars_kept": 100_000}


# ----------------------------------------------------------------------------------------- names


def test_a_name_that_sanitising_changes_gets_a_hash_and_one_that_needs_no_change_is_kept() -> None:
    assert sanitise_name("get_weather-2") == "get_weather-2"
    assert sanitise_name("x" * 64) == "x" * 64
    tokyo, osaka = sanitise_name("東京"), sanitise_name("大阪")
    assert tokyo.startswith("___") and osaka.startswith("___") and tokyo != osaka and len(tokyo) == 11
    assert sanitise_name("a.b") != sanitise_name("a_b") == "a_b"
    assert (sanitise_name("a.b"), tokyo) == ("a_b_2e7336dc", "___130016b2"), "stable, as docs/mcp.md shows"
    assert sanitise_name("") != "" and len(sanitise_name("é" * 128)) == 64


@pytest.mark.parametrize("naming", [McpToolNaming.as_is(), McpToolNaming.server_prefix()], ids=repr)
def test_tools_whose_names_sanitise_alike_stay_distinct_and_each_calls_its_own(naming: McpToolNaming) -> None:
    calls: Counter[str] = Counter()
    originals = ["東京", "大阪", "...", "..", "a.b", "a_b", "ok"]
    server = low_level_server({name: {"type": "object"} for name in originals}, calls)
    with McpToolCallbackProvider(McpServerConnection.in_process(server, name="low"), naming=naming) as provider:
        callbacks = provider.get_tool_callbacks()
        results = {c.original_name: c.call("{}") for c in callbacks}
    assert len({c.name for c in callbacks}) == len(originals)
    assert {name: getattr(r, "text", r) for name, r in results.items()} == {n: f"called {n}" for n in originals}
    assert calls == dict.fromkeys(originals, 1)
    unchanged = {c.original_name: c.name for c in callbacks if c.original_name in ("a_b", "ok")}
    prefix = "" if naming.description == "as_is()" else "low_"
    assert unchanged == {"a_b": f"{prefix}a_b", "ok": f"{prefix}ok"}


# ----------------------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("mode", MODES)
def test_arguments_that_do_not_fit_the_schema_go_back_to_the_model_and_never_to_the_server(mode: str, url: str) -> None:
    connection = McpServerConnection.http(url, name="low")
    with McpToolCallbackProvider(connection) as provider, warnings.catch_warnings():
        warnings.simplefilter("ignore", McpUnsafeWarning)
        model = ScriptedChatModel(calling("ok", {"n": "not-int"}))
        run_spec(mode, ChatClient.create(model).prompt("x").tools(provider))
    response = tool_response(model)
    assert response.is_error
    assert "Invalid arguments for tool 'ok': n: 'not-int' is not of type 'integer'" in response.response_data
    assert CALLS == {}


QUICK_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (GOOD, [{"n": 1}, {"n": True}, {"n": 1.0}, {"n": "1"}, {}, {"n": 1, "extra": [1]}]),
    (
        {
            "type": "object",
            "properties": {
                "q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Q"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", 1, True]},
                "x": {"type": ["number", "boolean"]},
                "inner": {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
            },
            "additionalProperties": False,
        },
        [
            {"q": None, "tags": ["a"], "mode": "a", "x": 1.5, "inner": {"k": 1}},
            {"q": 3},
            {"tags": ["a", 2]},
            {"mode": 1},
            {"mode": 1.0},
            {"mode": False},
            {"x": True},
            {"x": "no"},
            {"inner": {}},
            {"inner": {"k": True}},
            {"other": 1},
        ],
    ),
]


@pytest.mark.parametrize(("schema", "values"), QUICK_CASES)
def test_the_quick_argument_check_agrees_with_jsonschema(schema: dict[str, Any], values: list[Any]) -> None:
    from jsonschema import validators

    from chatclient.errors import ToolArgumentsError
    from chatclient.mcp.arguments import ArgumentsCheck

    check = ArgumentsCheck(schema)
    assert check.is_quick
    reference = validators.validator_for(schema)(schema)
    for value in values:
        try:
            check.check(value, "t")
        except ToolArgumentsError:
            assert not reference.is_valid(value), value
        else:
            assert reference.is_valid(value), value


def test_a_schema_beyond_the_quick_subset_is_checked_by_jsonschema_alone() -> None:
    from chatclient.errors import ToolArgumentsError
    from chatclient.mcp.arguments import ArgumentsCheck

    check = ArgumentsCheck({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}})
    assert not check.is_quick
    check.check({"n": 3}, "t")
    with pytest.raises(ToolArgumentsError, match="n: 2 is less than the minimum of 3"):
        check.check({"n": 2}, "t")
