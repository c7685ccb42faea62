"""``create_embedding_model("provider:model")``: an embedding model from a string, as ``create``
makes a chat model, for configuration files. Only the built-in providers that have an embeddings
API; nothing is imported until one is asked for."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatclient.retrieval.embedding import EmbeddingModel

__all__ = ["create_embedding_model"]

_BUILTIN: dict[str, tuple[str, str]] = {
    "ollama": ("providers.ollama.embedding", "OllamaEmbeddingModel"),
    "openai": ("providers.openai.embedding", "OpenAIEmbeddingModel"),
}


def create_embedding_model(spec: str, **kwargs: Any) -> EmbeddingModel:
    """The embedding model named by ``"provider:model"`` (``"openai:text-embedding-3-small"``,
    ``"ollama:nomic-embed-text"``); ``kwargs`` go to its constructor (``dimensions=``, ``base_url=``, ...)."""
    from chatclient.errors import ConfigurationError

    name, sep, model = spec.partition(":")
    name = name.strip()
    known = ", ".join(sorted(_BUILTIN))
    if not sep or not name or not model:
        raise ConfigurationError(f"Expected 'provider:model' (e.g. 'openai:text-embedding-3-small'), got {spec!r}")
    if name not in _BUILTIN:
        raise ConfigurationError(f"No embedding model for provider {name!r}; providers with one: {known}")
    module_name, attribute = _BUILTIN[name]
    made: EmbeddingModel = getattr(importlib.import_module(module_name), attribute)(model, **kwargs)
    return made
