"""What the model is told about a tool: names, descriptions and argument schemas from Python code."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from chatclient.errors import ConfigurationError
from chatclient.tools import FunctionToolCallback, ToolContext, ToolSpec, tool, tool_callbacks_from


class Address(BaseModel):
    street: str
    zip_code: Annotated[str, Field(description="Postal code")]


class WeatherRequest(BaseModel):
    city: str


class WeatherResponse(BaseModel):
    city: str
    condition: str
    temperature: int


def definition_of(fn: Any) -> dict[str, Any]:
    (callback,) = tool_callbacks_from(fn)
    return callback.definition.model_dump()


def test_annotated_descriptions_and_defaults_shape_the_schema() -> None:
    @tool
    def get_weather(
        city: Annotated[str, Field(description="City name")],
        unit: Annotated[Literal["c", "f"], Field(description="Temperature unit")] = "c",
        days: int = 1,
    ) -> str:
        """Current weather for a city."""
        return city

    assert definition_of(get_weather) == {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {
                    "type": "string",
                    "enum": ["c", "f"],
                    "description": "Temperature unit",
                    "default": "c",
                },
                "days": {"type": "integer", "default": 1},
            },
            "required": ["city"],
        },
    }


def test_field_as_default_value_describes_the_parameter() -> None:
    @tool
    def page(size: int = Field(10, description="Items per page", le=100), cursor: str = Field()) -> str:
        return f"{size}:{cursor}"

    schema = definition_of(page)["input_schema"]
    assert schema["properties"]["size"] == {
        "type": "integer",
        "default": 10,
        "description": "Items per page",
        "maximum": 100,
    }
    assert schema["required"] == ["cursor"]
    (callback,) = tool_callbacks_from(page)
    assert callback.call('{"cursor": "c"}') == "10:c"


def test_tool_context_parameter_is_not_in_the_schema() -> None:
    @tool
    def whoami(greeting: str, context: ToolContext) -> str:
        return greeting

    @tool
    def maybe(context: ToolContext | None = None) -> str:
        return ""

    assert definition_of(whoami)["input_schema"]["properties"] == {"greeting": {"type": "string"}}
    assert definition_of(maybe)["input_schema"]["properties"] == {}


def test_nested_models_go_to_defs_without_name_titles() -> None:
    @tool
    def ship(address: Address, express: bool = False) -> str:
        """Ship a parcel."""
        return address.street

    schema = definition_of(ship)["input_schema"]
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Address"]["properties"] == {
        "street": {"type": "string"},
        "zip_code": {"type": "string", "description": "Postal code"},
    }
    assert schema["required"] == ["address"]
    assert "title" not in schema
    assert "title" not in schema["properties"]["express"]


def test_parameters_named_like_basemodel_attributes_work() -> None:
    @tool
    def clash(json: str, copy: int, schema: bool, model_config: str, _private: int = 0) -> dict[str, Any]:
        return {
            "json": json,
            "copy": copy,
            "schema": schema,
            "model_config": model_config,
            "_private": _private,
        }

    (callback,) = tool_callbacks_from(clash)
    properties = callback.definition.input_schema["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == ["json", "copy", "schema", "model_config", "_private"]
    result = callback.call('{"json": "j", "copy": "2", "schema": true, "model_config": "m", "_private": 5}')
    assert result == '{"json":"j","copy":2,"schema":true,"model_config":"m","_private":5}'


def test_missing_annotation_accepts_any_json() -> None:
    @tool
    def echo(value, times: int = 1):
        return [value] * times

    assert definition_of(echo)["input_schema"]["properties"]["value"] == {}
    (callback,) = tool_callbacks_from(echo)
    assert callback.call('{"value": {"a": [1]}, "times": 2}') == '[{"a":[1]},{"a":[1]}]'


def test_docstring_is_the_default_description_and_name_the_fallback() -> None:
    @tool
    def documented() -> str:
        """First line.

        More detail.
        """
        return ""

    @tool
    def undocumented() -> str:
        return ""

    @tool(name="renamed", description="Told explicitly")
    def original() -> str:
        """Ignored."""
        return ""

    assert definition_of(documented)["description"] == "First line.\n\nMore detail."
    assert definition_of(undocumented)["description"] == "undocumented"
    assert definition_of(original)["name"] == "renamed"
    assert definition_of(original)["description"] == "Told explicitly"


def test_decorator_returns_the_same_function_still_callable() -> None:
    def plain(x: int) -> int:
        return x * 2

    decorated = tool(return_direct=True, requires_confirmation=True)(plain)
    assert decorated is plain
    assert decorated(21) == 42
    spec = plain.__chatclient_tool__  # type: ignore[attr-defined]
    assert isinstance(spec, ToolSpec)
    assert spec.metadata.return_direct and spec.metadata.requires_confirmation


def test_schema_is_built_once_and_shared() -> None:
    @tool
    def cached(x: int) -> int:
        return x

    (first,) = tool_callbacks_from(cached)
    (second,) = tool_callbacks_from(cached)
    assert first is second
    assert first.definition is second.definition


def test_annotations_may_name_classes_defined_after_the_tool() -> None:
    @tool
    def later(item: LaterModel) -> str:
        return item.label

    (callback,) = tool_callbacks_from(later)
    assert callback.call('{"item": {"label": "ok"}}') == "ok"


class LaterModel(BaseModel):
    label: str


def test_variadic_parameters_are_rejected_at_decoration() -> None:
    def star(*args: int) -> int:
        return 0

    def double_star(**kwargs: int) -> int:
        return 0

    with pytest.raises(ConfigurationError, match=r"variadic parameters \(args\)"):
        tool(star)
    with pytest.raises(ConfigurationError, match=r"variadic parameters \(kwargs\)"):
        FunctionToolCallback.builder("x", double_star).build()


def test_non_functions_are_rejected_by_the_decorator() -> None:
    with pytest.raises(ConfigurationError, match=r"FunctionToolCallback\.builder"):
        tool(functools.partial(print, "x"))


def test_unresolvable_annotation_is_a_clear_error_on_first_use() -> None:
    @tool
    def broken(x: Undefined) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    (callback,) = tool_callbacks_from(broken)
    with pytest.raises(ConfigurationError, match="Cannot build the argument schema of tool function"):
        _ = callback.definition


def test_input_type_builder_uses_the_model_schema() -> None:
    """The seed's example: a WeatherRequest record becomes the tool's input."""

    def get_weather(request: WeatherRequest) -> WeatherResponse:
        return WeatherResponse(city=request.city, condition="晴天", temperature=28)

    callback = (
        FunctionToolCallback.builder("getWeather", get_weather)
        .description("获取天气")
        .input_type(WeatherRequest)
        .build()
    )
    assert callback.definition.model_dump() == {
        "name": "getWeather",
        "description": "获取天气",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    assert callback.call('{"city": "北京"}') == '{"city":"北京","condition":"晴天","temperature":28}'


def test_input_type_function_may_take_the_context_second() -> None:
    def lookup(request: WeatherRequest, context: ToolContext) -> str:
        return f"{request.city} for {context['user']}"

    callback = FunctionToolCallback.builder("lookup", lookup).input_type(WeatherRequest).build()
    assert callback.call('{"city": "Oslo"}', ToolContext({"user": "ada"})) == "Oslo for ada"


def test_input_type_function_with_too_many_parameters_is_rejected() -> None:
    def three(a: WeatherRequest, b: ToolContext, c: int) -> str:
        return ""

    with pytest.raises(ConfigurationError, match=r"must take \(input\) or \(input, context\)"):
        FunctionToolCallback.builder("three", three).input_type(WeatherRequest).build()


def test_builder_without_input_type_reads_the_signature() -> None:
    def add(a: int, b: Annotated[int, Field(description="second")] = 2) -> int:
        """Add numbers."""
        return a + b

    callback = FunctionToolCallback.builder("add", add).return_direct().requires_confirmation().build()
    assert callback.definition.description == "Add numbers."
    assert callback.definition.input_schema["required"] == ["a"]
    assert callback.metadata.return_direct and callback.metadata.requires_confirmation
    assert callback.call('{"a": 1}') == "3"
