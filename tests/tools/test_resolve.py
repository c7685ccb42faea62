"""Turning the tools a caller passes into one flat tuple of uniquely named callbacks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chatclient.errors import ConfigurationError, DuplicateToolNameError
from chatclient.tools import FunctionToolCallback, ToolCallback, resolve_tools, tool


@tool
def alpha() -> str:
    return "a"


@tool
def beta() -> str:
    return "b"


class Toolbox:
    @tool
    def gamma(self) -> str:
        return "g"

    @tool
    def delta(self) -> str:
        return "d"


class Provider:
    def __init__(self) -> None:
        self.asked = 0

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        self.asked += 1
        return [FunctionToolCallback.builder(f"dynamic_{self.asked}", lambda: "x").build()]


def names(callbacks: Sequence[ToolCallback]) -> list[str]:
    return [callback.name for callback in callbacks]


def test_every_form_flattens_in_order() -> None:
    epsilon = FunctionToolCallback.builder("epsilon", lambda: "e").build()
    resolved = resolve_tools([alpha, [Toolbox(), (epsilon, [beta])], Provider()])
    assert names(resolved) == ["alpha", "gamma", "delta", "epsilon", "beta", "dynamic_1"]


def test_providers_are_asked_at_each_resolution() -> None:
    provider = Provider()
    assert names(resolve_tools([provider])) == ["dynamic_1"]
    assert names(resolve_tools([provider])) == ["dynamic_2"]


def test_resolved_callbacks_pass_through_unchanged() -> None:
    resolved = resolve_tools([alpha, Toolbox()])
    again = resolve_tools(resolved)
    assert all(a is b for a, b in zip(resolved, again, strict=True))


def test_duplicate_names_are_listed_once_each() -> None:
    other_alpha = FunctionToolCallback.builder("alpha", lambda: "A").build()
    with pytest.raises(DuplicateToolNameError) as info:
        resolve_tools([alpha, beta, other_alpha, alpha, beta])
    assert info.value.names == ["alpha", "beta"]


def test_plain_function_suggests_how_to_make_it_a_tool() -> None:
    def undecorated() -> str:
        return ""

    with pytest.raises(ConfigurationError, match=r"decorate it with @tool or wrap it with FunctionToolCallback"):
        resolve_tools([undecorated])


def test_object_without_tools_names_its_type() -> None:
    class Empty:
        pass

    with pytest.raises(ConfigurationError, match=r"Empty object is not a tool.*no @tool methods"):
        resolve_tools([Empty()])


def test_provider_returning_non_callbacks_is_rejected() -> None:
    class Broken:
        def tool_callbacks(self) -> Sequence[ToolCallback]:
            return [alpha]  # type: ignore[list-item]

    with pytest.raises(ConfigurationError, match=r"Broken.tool_callbacks\(\) returned .* not a ToolCallback"):
        resolve_tools([Broken()])
