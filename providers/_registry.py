"""``create("provider:model")``: a ``ChatModel`` from a string, for configuration files and CLIs.

Three sources, looked up in this order:

1. factories registered in code with :func:`register` (they may replace a built-in name);
2. the built-in providers, imported only when first asked for;
3. third-party packages, through the entry-point group ``chatclient.providers``: an entry point
   named ``acme`` that points at a class or a factory ``(model: str, **kwargs) -> ChatModel``
   makes ``create("acme:some-model")`` work. Entry points are read once, on the first name that is
   neither registered nor built in.

This module imports nothing heavy: no provider, no HTTP client, no SDK until one is asked for.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from chatclient.model import ChatModel

__all__ = ["ENTRY_POINT_GROUP", "ProviderFactory", "create", "known_providers", "register"]

ENTRY_POINT_GROUP = "chatclient.providers"

ProviderFactory = Callable[..., "ChatModel"]
"""A class or function called as ``factory(model, **kwargs)`` that returns a ``ChatModel``."""

_BUILTIN: dict[str, tuple[str, str]] = {
    "anthropic": ("providers.anthropic", "AnthropicChatModel"),
    "bedrock": ("providers.bedrock", "BedrockChatModel"),
    "gemini": ("providers.gemini", "GeminiChatModel"),
    "ollama": ("providers.ollama", "OllamaChatModel"),
    "openai": ("providers.openai", "OpenAIChatModel"),
    "openai-responses": ("providers.openai_responses", "OpenAIResponsesChatModel"),
}

_lock = threading.Lock()
_registered: dict[str, ProviderFactory] = {}
_entry_points: dict[str, EntryPoint] | None = None


def _configuration_error(message: str) -> Exception:
    from chatclient.errors import ConfigurationError

    return ConfigurationError(message)


def register(name: str, factory: ProviderFactory) -> ProviderFactory:
    """Make ``create(f"{name}:<model>")`` call ``factory(model, **kwargs)``; returns ``factory``.

    A registered name wins over a built-in or entry-point provider of the same name.
    """
    if not name or ":" in name or name != name.strip():
        raise _configuration_error(f"Invalid provider name {name!r}: non-empty, no ':' and no surrounding spaces")
    if not callable(factory):
        raise _configuration_error(f"The factory for provider {name!r} is not callable: {factory!r}")
    with _lock:
        _registered[name] = factory
    return factory


def _discover() -> dict[str, EntryPoint]:
    global _entry_points
    with _lock:
        if _entry_points is None:
            from importlib.metadata import entry_points

            _entry_points = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        return _entry_points


def known_providers() -> list[str]:
    """Every provider name ``create`` accepts right now (entry points included)."""
    return sorted({*_registered, *_BUILTIN, *_discover()})


def _factory(name: str) -> ProviderFactory:
    factory = _registered.get(name)
    if factory is not None:
        return factory
    builtin = _BUILTIN.get(name)
    if builtin is not None:
        module_name, attribute = builtin
        from chatclient._layout import shadowing

        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            unavailable = _configuration_error(f"Provider {name!r} is not available: {exc}")
            raise (shadowing("providers") or unavailable) from exc
        found: ProviderFactory | None = getattr(module, attribute, None)
        if found is None:
            raise shadowing("providers") or _configuration_error(
                f"Provider {name!r} is not available: {module_name} has no {attribute}"
            )
        return found
    entry_point = _discover().get(name)
    if entry_point is None:
        import difflib  # only on this error: the registry imports nothing it does not need

        known = known_providers()
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise _configuration_error(
            f"Unknown provider {name!r}.{hint} Known providers: {', '.join(known)}. "
            f"Register one with providers.register(name, factory) or the {ENTRY_POINT_GROUP!r} entry-point group."
        )
    try:
        loaded: ProviderFactory = entry_point.load()
    except Exception as exc:
        raise _configuration_error(
            f"Provider {name!r} (entry point {entry_point.value!r}) failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    return loaded


def create(spec: str, **kwargs: Any) -> ChatModel:
    """The model named by ``"provider:model"``; ``kwargs`` go to the provider's constructor.

    Only the first ``:`` separates, so ``create("ollama:qwen3:0.6b")`` is Ollama's ``qwen3:0.6b``.
    """
    from chatclient.model import ChatModel

    name, sep, model = spec.partition(":")
    name = name.strip()
    if not sep or not name or not model:
        raise _configuration_error(
            f"Expected 'provider:model' (e.g. 'openai:gpt-4o-mini'), got {spec!r}. "
            f"Known providers: {', '.join(known_providers())}"
        )
    made = _factory(name)(model, **kwargs)
    if not isinstance(made, ChatModel):
        raise _configuration_error(f"Provider {name!r} returned {type(made).__name__}, not a ChatModel")
    return made
