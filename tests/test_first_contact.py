"""First contact (issue 35): a model string for the client, options as keywords, and errors that say
what to pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

import providers
from chatclient import ChatClient, ChatOptions, ConfigurationError
from chatclient.testing import ScriptedChatModel
from providers.anthropic import AnthropicChatModel
from providers.ollama import OllamaChatModel
from providers.openai import OpenAIChatModel, OpenAIChatOptions


@pytest.fixture
def recorded() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """A provider registered for the test that records what the registry hands it."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def factory(model: str, **kwargs: Any) -> ScriptedChatModel:
        seen.append((model, kwargs))
        return ScriptedChatModel(["Hi from the plugin."], model=model)

    providers.register("acme-test", factory)
    try:
        yield seen
    finally:
        providers._registry._registered.pop("acme-test", None)


def test_a_registry_string_builds_the_providers_model_with_its_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    client = ChatClient.create("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    assert isinstance(client.model, OpenAIChatModel)
    assert client.model.default_options is not None and client.model.default_options.model == "gpt-4o-mini"
    assert client.model.base_url == "http://127.0.0.1:9/v1"
    assert isinstance(ChatClient.builder("anthropic:claude-sonnet-4-5").build().model, AnthropicChatModel)
    ollama = ChatClient.create("ollama:qwen3:0.6b").model
    assert isinstance(ollama, OllamaChatModel) and ollama.default_options is not None
    assert ollama.default_options.model == "qwen3:0.6b"


def test_a_plugins_prefix_gets_the_keywords_and_answers(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    client = ChatClient.builder("acme-test:m1", api_key="k", region="eu").default_system("Be brief.").build()
    assert recorded == [("m1", {"api_key": "k", "region": "eu"})]
    assert client.prompt("Hi").call().content() == "Hi from the plugin."


def test_a_chat_model_is_used_as_it_is() -> None:
    model = ScriptedChatModel(["ok"])
    assert ChatClient.create(model).model is model
    assert ChatClient.builder(model).build().model is model


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (None, "got NoneType None"),
        (42, "got int 42"),
        (b"openai:gpt-4o-mini", "got bytes b'openai:gpt-4o-mini'"),
        (OpenAIChatOptions(model="gpt-4o-mini"), "got OpenAIChatOptions"),
        (ScriptedChatModel, "the class ScriptedChatModel was given: create an instance"),
    ],
)
def test_anything_else_is_a_type_error_naming_what_was_given_and_what_to_pass(given: object, shown: str) -> None:
    for make in (ChatClient.create, ChatClient.builder):
        with pytest.raises(TypeError, match=r"takes a ChatModel or a 'provider:model' string") as caught:
            make(given)  # type: ignore[arg-type]
        assert shown in str(caught.value)
        assert "'openai:gpt-4o-mini'" in str(caught.value)


def test_keywords_with_a_model_object_are_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"keyword arguments \(base_url\) with a ChatModel.*ScriptedChatModel"):
        ChatClient.create(ScriptedChatModel(["ok"]), base_url="http://x")


def test_an_unknown_prefix_lists_the_known_ones() -> None:
    near_miss = r"Unknown provider 'opneai'\. Did you mean 'openai'\? Known providers: .*anthropic.*openai"
    with pytest.raises(ConfigurationError, match=near_miss):
        ChatClient.create("opneai:gpt-4o-mini")
    with pytest.raises(ConfigurationError, match=r"Expected 'provider:model'.*got 'gpt-4o-mini'"):
        ChatClient.create("gpt-4o-mini")


def test_a_keyword_the_provider_does_not_take_is_its_type_error(recorded: list[tuple[str, dict[str, Any]]]) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'bse_url'"):
        ChatClient.create("openai:gpt-4o-mini", bse_url="http://x", api_key="k")


# ------------------------------------------------------------------------------------------ options


def _sent(model: ScriptedChatModel) -> ChatOptions:
    options = model.prompts[-1].options
    assert options is not None
    return options


def test_options_as_keywords_merge_over_the_defaults_like_an_options_object() -> None:
    model = ScriptedChatModel(["a", "b", "c"])
    client = ChatClient.builder(model).default_options(temperature=0.7, max_tokens=100).build()
    client.prompt("Hi").options(temperature=0.2).call().content()
    assert (_sent(model).temperature, _sent(model).max_tokens) == (0.2, 100)
    client.prompt("Hi").options(ChatOptions(top_p=0.5), max_tokens=5).call().content()  # both: keywords win
    assert (_sent(model).temperature, _sent(model).top_p, _sent(model).max_tokens) == (0.7, 0.5, 5)
    client.prompt("Hi").options(temperature=None).call().content()  # a keyword set to None clears a default
    assert _sent(model).temperature is None


def test_keywords_are_built_as_the_models_own_options_class(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    client = ChatClient.builder("openai:gpt-4o-mini").default_options(reasoning_effort="low").build()
    spec = client.prompt("Hi").options(tool_choice="required", temperature=0.1)
    merged = spec._options()
    assert isinstance(merged, OpenAIChatOptions)
    assert (merged.model, merged.reasoning_effort, merged.tool_choice, merged.temperature) == (
        "gpt-4o-mini",
        "low",
        "required",
        0.1,
    )


def test_an_unknown_option_lists_the_valid_ones_with_the_near_miss_first(monkeypatch: pytest.MonkeyPatch) -> None:
    client = ChatClient.create(ScriptedChatModel(["ok"]))
    with pytest.raises(TypeError, match=r"unknown option 'temprature'.*Did you mean 'temperature'\?") as caught:
        client.prompt("Hi").options(temprature=0.2)
    assert "Valid options: frequency_penalty, max_tokens, model," in str(caught.value)
    assert "tool_choice" in str(caught.value)
    with pytest.raises(TypeError, match=r"default_options\(\) got an unknown option 'colour'.* Valid options: "):
        ChatClient.builder(ScriptedChatModel(["ok"])).default_options(colour="blue")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    with pytest.raises(TypeError, match=r"for OpenAIChatOptions\. Did you mean 'reasoning_effort'\?"):
        ChatClient.create("openai:gpt-4o-mini").prompt("Hi").options(reasoning_efort="low")


def test_a_bad_option_value_is_pydantics_error_and_tools_are_not_options() -> None:
    spec = ChatClient.create(ScriptedChatModel(["ok"])).prompt("Hi")
    with pytest.raises(ValidationError, match=r"temperature"):
        spec.options(temperature="hot")  # type: ignore[call-overload]  # mypy sees it too
    with pytest.raises(TypeError, match=r"does not take 'tool_callbacks' as an option: give tools with \.tools"):
        spec.options(tool_callbacks=())


def test_the_typed_overloads_keep_the_options_object_form() -> None:
    model = ScriptedChatModel(["ok"])
    client = ChatClient.builder(model).default_options(ChatOptions(max_tokens=3)).build()
    client.prompt("Hi").options(ChatOptions(temperature=0.3)).call().content()
    assert (_sent(model).max_tokens, _sent(model).temperature) == (3, 0.3)
