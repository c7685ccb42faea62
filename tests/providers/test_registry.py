"""``providers.create("provider:model")``: built-ins, code registration, entry points."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import providers
from chatclient import ChatModel, ChatResponse, Prompt
from chatclient.errors import ConfigurationError
from providers import _registry
from providers.openai import OpenAIChatModel


class EchoModel(ChatModel):
    def __init__(self, model: str, **kwargs: Any) -> None:
        self.model = model
        self.kwargs = kwargs

    def call(self, prompt: Prompt) -> ChatResponse:
        return ChatResponse.of(self.model)


class FakeEntryPoint:
    """What ``importlib.metadata.entry_points`` returns, without installing a package."""

    def __init__(self, name: str, target: Any, value: str = "acme_llm:AcmeChatModel") -> None:
        self.name = name
        self.value = value
        self.group = _registry.ENTRY_POINT_GROUP
        self._target = target
        self.loads = 0

    def load(self) -> Any:
        self.loads += 1
        if isinstance(self._target, BaseException):
            raise self._target
        return self._target


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_registry, "_registered", {})
    monkeypatch.setattr(_registry, "_entry_points", None)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield


def install_entry_points(monkeypatch: pytest.MonkeyPatch, *points: FakeEntryPoint) -> list[str]:
    """Patch ``importlib.metadata.entry_points`` (the registry imports it on first use)."""
    asked: list[str] = []

    def entry_points(*, group: str) -> list[FakeEntryPoint]:
        asked.append(group)
        return [p for p in points if p.group == group]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return asked


def test_openai_builtin() -> None:
    model = providers.create("openai:gpt-4o-mini", api_key="k", base_url="http://localhost:11434/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.default_options.model == "gpt-4o-mini" and model.base_url == "http://localhost:11434/v1"


def test_only_the_first_colon_separates() -> None:
    model = providers.create("openai:qwen3:0.6b", base_url="http://localhost:11434/v1")
    assert isinstance(model, OpenAIChatModel) and model.default_options.model == "qwen3:0.6b"


@pytest.mark.parametrize(
    ("name", "module", "cls"),
    [
        ("anthropic", "providers.anthropic", "AnthropicChatModel"),
        ("ollama", "providers.ollama", "OllamaChatModel"),
        ("openai-responses", "providers.openai_responses", "OpenAIResponsesChatModel"),
    ],
)
def test_other_builtins_are_imported_lazily(monkeypatch: pytest.MonkeyPatch, name: str, module: str, cls: str) -> None:
    fake = type(sys)(module)
    setattr(fake, cls, EchoModel)
    monkeypatch.setitem(sys.modules, module, fake)
    made = providers.create(f"{name}:some-model", api_key="k")
    assert isinstance(made, EchoModel) and made.model == "some-model" and made.kwargs == {"api_key": "k"}


def test_register_in_code_wins_over_a_builtin() -> None:
    assert providers.register("openai", EchoModel) is EchoModel
    made = providers.create("openai:x", temperature=1)
    assert isinstance(made, EchoModel) and made.kwargs == {"temperature": 1}


def test_register_a_factory_function() -> None:
    providers.register("local", lambda model, **kw: EchoModel(model.upper(), **kw))
    made = providers.create("local:tiny")
    assert isinstance(made, EchoModel) and made.model == "TINY"


@pytest.mark.parametrize("name", ["", "a:b", " padded "])
def test_register_rejects_bad_names(name: str) -> None:
    with pytest.raises(ConfigurationError):
        providers.register(name, EchoModel)


def test_register_rejects_non_callables() -> None:
    with pytest.raises(ConfigurationError):
        providers.register("x", "not callable")  # type: ignore[arg-type]


def test_entry_point_is_looked_up_lazily_and_once(monkeypatch: pytest.MonkeyPatch) -> None:
    acme = FakeEntryPoint("acme", EchoModel)
    asked = install_entry_points(monkeypatch, acme)
    providers.create("openai:gpt-4o", api_key="k")
    assert asked == [], "known names never scan the installed packages"
    made = providers.create("acme:rocket-1", region="eu")
    assert isinstance(made, EchoModel) and made.model == "rocket-1" and made.kwargs == {"region": "eu"}
    providers.create("acme:rocket-2")
    assert asked == [_registry.ENTRY_POINT_GROUP], "entry points are read once"
    assert acme.loads == 2


def test_unknown_provider_lists_the_known_names(monkeypatch: pytest.MonkeyPatch) -> None:
    install_entry_points(monkeypatch, FakeEntryPoint("acme", EchoModel))
    providers.register("local", EchoModel)
    with pytest.raises(ConfigurationError) as raised:
        providers.create("nope:model")
    message = str(raised.value)
    assert "Unknown provider 'nope'" in message
    for name in ("acme", "anthropic", "local", "ollama", "openai", "openai-responses"):
        assert name in message


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", ":gpt-4o", ""])
def test_a_spec_needs_provider_and_model(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    install_entry_points(monkeypatch)
    with pytest.raises(ConfigurationError, match="Expected 'provider:model'"):
        providers.create(spec)


def test_an_entry_point_that_fails_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    install_entry_points(monkeypatch, FakeEntryPoint("broken", ImportError("no module named acme_llm")))
    with pytest.raises(ConfigurationError, match="failed to load") as raised:
        providers.create("broken:x")
    assert isinstance(raised.value.__cause__, ImportError)


def test_a_factory_must_return_a_chat_model() -> None:
    providers.register("bad", lambda model, **kw: object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not a ChatModel"):
        providers.create("bad:x")


def test_a_builtin_that_cannot_be_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "providers.ollama", None)  # makes the import fail
    with pytest.raises(ConfigurationError, match="'ollama' is not available"):
        providers.create("ollama:qwen3")


def test_importing_providers_is_light() -> None:
    watched = "('providers', 'httpx2', 'openai', 'anthropic', 'importlib.metadata')"
    code = f"import sys, providers; print(sorted(m for m in sys.modules if m.startswith({watched})))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['providers', 'providers._registry']"
