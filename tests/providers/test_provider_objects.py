"""The provider object beside each model: one shape for the four built-in vendors (key and its
environment variable, base URL, SDK client, repr), the model keeping the wire mapping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient import ConfigurationError
from chatclient.prompt import Prompt
from providers.anthropic import AnthropicChatModel, AnthropicProvider
from providers.ollama import OllamaChatModel, OllamaProvider
from providers.openai import OpenAIChatModel, OpenAIProvider
from providers.openai_responses import OpenAIResponsesChatModel
from providers.shell import Provider, ProviderModel, ProviderOptions, Secret

from .plugin_provider import WIRE

ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_API_KEY", "OLLAMA_HOST")

# name: (model class, its provider class, the vendor's own base URL, the key's variable)
VENDORS: dict[str, tuple[Callable[..., ProviderModel[Any]], type[Provider], str, str]] = {
    "openai": (OpenAIChatModel, OpenAIProvider, "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-responses": (OpenAIResponsesChatModel, OpenAIProvider, "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": (AnthropicChatModel, AnthropicProvider, "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "ollama": (OllamaChatModel, OllamaProvider, "https://ollama.com", "OLLAMA_API_KEY"),
}


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("name", VENDORS)
def test_one_repr_for_every_model_and_its_provider(name: str) -> None:
    model_class, provider_class, _, _ = VENDORS[name]
    model_name = getattr(model_class, "__name__", "")
    model = model_class("m", api_key="sk-secret-1", base_url="http://user:pw@gateway.local:8080/v1/")
    assert repr(model) == f"{model_name}(model='m', base_url='http://user:[secure]@gateway.local:8080/v1')"
    assert repr(model.provider) == f"{provider_class.__name__}(base_url='http://user:[secure]@gateway.local:8080/v1')"
    assert type(model.provider) is provider_class and model.base_url == "http://user:pw@gateway.local:8080/v1"
    assert "sk-secret-1" not in repr(model) + repr(model.provider) + repr(vars(model.provider))


@pytest.mark.parametrize("name", VENDORS)
def test_a_missing_key_is_refused_for_the_vendors_own_host_only(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model_class, _, own, variable = VENDORS[name]
    with pytest.raises(ConfigurationError, match=f"No .* API key for .*{variable}"):
        model_class("m", base_url=own)
    model_class("m", base_url="http://localhost:9999/v1")  # a server of your own may need no key
    model_class("m", base_url=own, api_key="")  # a deliberate "send none": a gateway adds it
    monkeypatch.setenv(variable, "sk-from-env")
    model_class("m", base_url=own)


def test_openais_key_stays_home_and_anthropics_follows_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per vendor, as documented: ``OPENAI_API_KEY`` is not sent to another server named by an
    explicit ``base_url`` (a local one); ``ANTHROPIC_API_KEY`` goes wherever the model points."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-anthropic")
    local = "http://localhost:9999/v1"
    assert "authorization" not in OpenAIProvider(base_url=local).secret_headers
    assert "authorization" in OpenAIProvider().secret_headers
    assert AnthropicProvider(base_url=local).secret_headers["x-api-key"].reveal() == "sk-anthropic"


def test_a_provider_is_passed_or_built_from_the_models_keywords_not_both() -> None:
    provider = OpenAIProvider(api_key="sk-1")
    with pytest.raises(TypeError, match="provider= or its settings \\(api_key\\)"):
        OpenAIChatModel("m", provider=provider, api_key="sk-2")


def test_one_provider_serves_both_openai_wires_each_with_its_own_transport() -> None:
    sent: list[httpx2.Request] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        if request.url.path.endswith("/responses"):
            output = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]
            return httpx2.Response(200, json={"id": "r", "status": "completed", "output": output})
        message = {"role": "assistant", "content": "hi"}
        return httpx2.Response(200, json={"id": "c", "choices": [{"message": message, "finish_reason": "stop"}]})

    provider = OpenAIProvider(api_key="sk-shared", http_client=httpx2.Client(transport=httpx2.MockTransport(reply)))
    chat, responses = OpenAIChatModel("a", provider=provider), OpenAIResponsesChatModel("b", provider=provider)
    assert chat.provider is responses.provider and chat._http is not responses._http
    assert chat.call(Prompt("q")).text == responses.call(Prompt("q")).text == "hi"
    assert [r.url.path for r in sent] == ["/v1/chat/completions", "/v1/responses"]
    assert {r.headers["authorization"] for r in sent} == {"Bearer sk-shared"}


def test_headers_hold_credentials_and_secrets_as_secrets() -> None:
    provider = Provider(
        base_url="https://api.acme.test", headers={"Api-Key": "k1", "X-Token": Secret("k2"), "X-Team": "a"}
    )
    assert provider.plain_headers == {"X-Team": "a"}
    assert {name: value.reveal() for name, value in provider.secret_headers.items()} == {
        "api-key": "k1",
        "x-token": "k2",
    }
    assert "k1" not in repr(vars(provider)) and "k2" not in repr(vars(provider))


def test_a_provider_without_a_base_url_or_with_a_bad_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="pass base_url="):
        Provider()
    with pytest.raises(ConfigurationError, match="is not an http\\(s\\) URL"):
        Provider(base_url="api.acme.test/v1")


def test_ollama_takes_no_sdk_client() -> None:
    with pytest.raises(ConfigurationError, match="takes no SDK client"):
        OllamaProvider(client=object())


@pytest.mark.parametrize(
    "make",
    [
        lambda: OpenAIChatModel("m", api_key="k", base_url="https://gw.test/v1", headers={"x-team": "a"}, timeout=5),
        lambda: AnthropicChatModel("m", api_key="k", headers={"x-team": "a"}),
        lambda: OllamaChatModel("m", headers={"x-team": "a"}),
    ],
)
def test_every_model_sends_the_providers_headers(make: Callable[[], ProviderModel[Any]]) -> None:
    model = make()
    assert model._http._request_headers()["x-team"] == "a"


class AcmeProvider(Provider):
    """A plugin's own vendor, declared as ``providers/shell.py`` shows."""

    vendor, key_env, default_base_url = "Acme", "ACME_API_KEY", "https://api.acme.example"
    vendor_hosts = frozenset({"api.acme.example"})


class AcmeChatModel(ProviderModel[ProviderOptions]):
    wire = WIRE
    provider_class = AcmeProvider

    def __init__(self, model: str, *, provider: Provider | None = None, **provider_args: Any) -> None:
        super().__init__(defaults=ProviderOptions(model=model), provider=provider, **provider_args)


def test_a_plugins_own_provider_follows_the_built_in_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match=r"No Acme API key for https://api\.acme\.example: .*ACME_API_KEY"):
        AcmeChatModel("m")
    sent: list[httpx2.Request] = []

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json={"id": "1", "say": "hi", "calls": [], "end": "done"})

    monkeypatch.setenv("ACME_API_KEY", "sk-acme")
    model = AcmeChatModel("m", http_client=httpx2.Client(transport=httpx2.MockTransport(reply)))
    assert model.call(Prompt("q")).text == "hi"
    assert (
        sent[0].headers["authorization"] == "Bearer sk-acme" and str(sent[0].url) == "https://api.acme.example/v1/talk"
    )
    assert repr(model) == "AcmeChatModel(model='m', base_url='https://api.acme.example')"
