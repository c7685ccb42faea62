"""``FunctionToolCallback.builder(name, fn).input_schema(schema)``: the schema is sent as given and
the arguments are checked against it before the function runs."""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, ToolResponseMessage, turn_messages
from chatclient.errors import ConfigurationError, ToolArgumentsError
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools import FunctionToolCallback, ToolContext

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
    "required": ["city"],
}


def forecast_tool(seen: list[Any]) -> FunctionToolCallback:
    def forecast(arguments: dict[str, Any], context: ToolContext) -> str:
        seen.append((arguments, dict(context)))
        return f"{arguments['city']}: sunny"

    return FunctionToolCallback.builder("forecast", forecast).description("Forecast").input_schema(SCHEMA).build()


def test_the_schema_is_sent_as_given_and_valid_arguments_reach_the_function() -> None:
    seen: list[Any] = []
    callback = forecast_tool(seen)
    assert callback.definition.input_schema == SCHEMA
    assert callback.call('{"city": "Oslo", "days": 3}', ToolContext({"user": "ana"})) == "Oslo: sunny"
    assert seen == [({"city": "Oslo", "days": 3}, {"user": "ana"})]


def test_invalid_arguments_are_refused_before_the_call_with_a_clear_message() -> None:
    seen: list[Any] = []
    callback = forecast_tool(seen)
    with pytest.raises(ToolArgumentsError) as caught:
        callback.call('{"days": 30}')
    assert "'city' is a required property" in str(caught.value)
    assert "days: 30 is greater than the maximum of 14" in str(caught.value)
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        callback.call("{oops")
    with pytest.raises(ToolArgumentsError, match="must be a JSON object"):
        callback.call("[1]")
    assert seen == []


def test_the_loop_reports_bad_arguments_to_the_model() -> None:
    seen: list[Any] = []
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("forecast", {"city": 7}, id="c1")]), "Sorry."]
    )
    response = ChatClient.create(model).prompt("x").tools(forecast_tool(seen)).call().chat_client_response()
    result = next(m for m in turn_messages(response) if isinstance(m, ToolResponseMessage)).responses[0]
    assert result.is_error and "city: 7 is not of type 'string'" in result.response_data
    assert seen == []


def test_bad_configuration_is_refused_when_the_tool_is_built() -> None:
    def one(arguments: dict[str, Any]) -> str:
        return "ok"

    with pytest.raises(ConfigurationError, match="type 'object'"):
        FunctionToolCallback.builder("t", one).input_schema({"type": "string"}).build()
    with pytest.raises(ConfigurationError, match="not a valid JSON schema"):
        FunctionToolCallback.builder("t", one).input_schema({"type": "object", "properties": 3}).build()

    def three(a: Any, b: Any, c: Any) -> str:
        return "ok"

    with pytest.raises(ConfigurationError, match="must take"):
        FunctionToolCallback.builder("t", three).input_schema(SCHEMA).build()


def test_an_async_function_with_a_keyword_only_context() -> None:
    async def lookup(arguments: dict[str, Any], *, context: ToolContext) -> str:
        return f"{arguments['city']} for {context['user']}"

    callback = FunctionToolCallback.builder("lookup", lookup).input_schema(SCHEMA).requires_confirmation().build()
    assert callback.metadata.requires_confirmation
    assert callback.call('{"city": "Rome"}', ToolContext({"user": "bo"})) == "Rome for bo"
