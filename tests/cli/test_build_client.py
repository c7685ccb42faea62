"""The chat's client, built in process: what the arguments turn into, and the mistakes they can hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import providers
from chatclient.cli.chat import build_client
from chatclient.cli.errors import UsageError
from chatclient.testing import ScriptedChatModel


@pytest.fixture
def scripted() -> Iterator[str]:
    """A provider registered for this test whose factory takes no ``base_url``."""

    def factory(model: str) -> ScriptedChatModel:
        return ScriptedChatModel(["ok"])

    providers.register("scripted-cli", factory)
    try:
        yield "scripted-cli:any"
    finally:
        providers._registry._registered.pop("scripted-cli", None)


def test_the_client_has_memory_and_the_system_text(scripted: str) -> None:
    client = build_client(scripted, system="Be brief.")
    advisors = "advisors=[SessionMemoryAdvisor, ToolCallingAdvisor]"
    assert repr(client) == f"ChatClient(model=ScriptedChatModel, {advisors}, tools=[])"
    assert client._defaults.system_text == "Be brief."


def test_a_provider_that_takes_no_base_url_is_a_usage_error(scripted: str) -> None:
    with pytest.raises(UsageError, match=r"scripted-cli:any: this provider does not take --base-url"):
        build_client(scripted, base_url="http://127.0.0.1:9/v1")


def test_an_unusable_memory_file_is_a_usage_error(scripted: str, tmp_path: Any) -> None:
    with pytest.raises(UsageError, match=r"--memory-file "):
        build_client(scripted, memory_file=str(tmp_path / "no-such-folder" / "chat.db"))


def test_options_become_the_clients_default_options(scripted: str) -> None:
    from chatclient.cli.chat import parse_options

    options = parse_options(["temperature=0.2", "tool_choice=required", 'stop_sequences=["END"]', "max_tokens=64"])
    assert options == {"temperature": 0.2, "tool_choice": "required", "stop_sequences": ["END"], "max_tokens": 64}
    merged = build_client(scripted, options=options).prompt("Hi")._options()
    assert (merged.temperature, merged.max_tokens, merged.stop_sequences) == (0.2, 64, ("END",))
    assert getattr(merged, "tool_choice", None) == "required"


def test_a_value_that_is_not_json_is_the_text_as_written() -> None:
    from chatclient.cli.chat import parse_options

    assert parse_options(["tool_choice=get_weather", "model=qwen3:0.6b", "empty="]) == {
        "tool_choice": "get_weather",
        "model": "qwen3:0.6b",
        "empty": "",
    }


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["temprature=0.2"], r"-o/--option: .*unknown option 'temprature'.*Did you mean 'temperature'\?"),
        (["temperature=hot"], r"^-o/--option: temperature: Input should be a valid number.* \(got .hot.\)$"),
    ],
)
def test_a_bad_option_is_a_usage_error(scripted: str, pairs: list[str], message: str) -> None:
    from chatclient.cli.chat import parse_options

    with pytest.raises(UsageError, match=message):
        build_client(scripted, options=parse_options(pairs))


def test_an_option_without_a_value_is_a_usage_error() -> None:
    from chatclient.cli.chat import parse_options

    with pytest.raises(UsageError, match=r"-o/--option 'temperature': expected KEY=VALUE"):
        parse_options(["temperature"])
