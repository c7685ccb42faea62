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
