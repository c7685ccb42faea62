from __future__ import annotations

import pytest

from chatclient import ChatOptions, ToolCallingChatOptions, tool


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def test_builder_sets_only_what_was_given() -> None:
    options = ChatOptions.builder().model("m").temperature(0.2).max_tokens(10).stop_sequences("a", "b").build()
    assert options == ChatOptions(model="m", temperature=0.2, max_tokens=10, stop_sequences=("a", "b"))
    assert options.model_fields_set == {"model", "temperature", "max_tokens", "stop_sequences"}


def test_tool_calling_builder_resolves_tools_and_context() -> None:
    options = ToolCallingChatOptions.builder().tool_callbacks(ping).tool_context({"user": "u1"}).model("m").build()
    assert isinstance(options, ToolCallingChatOptions)
    assert [c.name for c in options.tool_callbacks] == ["ping"]
    assert options.tool_context == {"user": "u1"}
    assert options.tool_callback("ping") is options.tool_callbacks[0]
    assert options.tool_callback("nope") is None


def test_unknown_option_name_is_a_clear_error() -> None:
    with pytest.raises(AttributeError, match="no option 'temp'"):
        ChatOptions.builder().set("temp", 1)


def test_merge_set_fields_win_and_explicit_none_clears() -> None:
    defaults = ChatOptions(model="base", temperature=0.7, max_tokens=100)
    merged = ChatOptions(temperature=0.1, max_tokens=None).merged_over(defaults)
    assert merged == ChatOptions(model="base", temperature=0.1, max_tokens=None)


def test_merge_keeps_the_more_specific_type() -> None:
    merged = ChatOptions(model="x").merged_over(ToolCallingChatOptions(tool_choice="auto", temperature=1))
    assert isinstance(merged, ToolCallingChatOptions)
    assert (merged.model, merged.tool_choice, merged.temperature) == ("x", "auto", 1)


def test_mutate_starts_from_the_set_fields() -> None:
    base = ChatOptions(model="m", temperature=0.3)
    changed = base.mutate().temperature(0.9).build()
    assert changed == ChatOptions(model="m", temperature=0.9)
    assert base.temperature == 0.3


def test_tools_are_not_serialized() -> None:
    options = ToolCallingChatOptions(tool_context={"secret": object()}, model="m")
    assert options.model_dump() == ChatOptions(model="m").model_dump() | {"tool_choice": None}


def test_merge_is_free_when_every_default_is_already_overridden() -> None:
    defaults = ToolCallingChatOptions(model="m", temperature=0.2)
    complete = ToolCallingChatOptions(model="x", temperature=0.5, max_tokens=9)
    assert complete.merged_over(defaults) is complete
    partial = ToolCallingChatOptions(temperature=0.5)
    assert partial.merged_over(defaults) == ToolCallingChatOptions(model="m", temperature=0.5)


def test_a_model_sends_the_prompts_options_over_its_defaults() -> None:
    from chatclient import ChatModel, ChatResponse, Prompt

    class WithDefaults(ChatModel):
        @property
        def default_options(self) -> ChatOptions:
            return ChatOptions(model="base", temperature=1.0)

        def call(self, prompt: Prompt) -> ChatResponse:
            return ChatResponse.of("ok")

    model = WithDefaults()
    assert model.options_for(Prompt("hi")) == ChatOptions(model="base", temperature=1.0)
    assert model.options_for(Prompt("hi", ChatOptions(temperature=0.1))) == ChatOptions(model="base", temperature=0.1)
