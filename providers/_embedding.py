"""Embedding models on the provider shell: the same provider object (key, base URL, headers,
clients), the same transport (retries, deadlines, error classes, key redaction) as the chat models,
with a request body and a reply reader per API instead of a chat wire.

A model subclass sets :attr:`path` and :attr:`provider_class`, passes its provider's error reader,
and writes ``build_body`` and ``parse``; the base class gives ``embed_batch``/``aembed_batch`` (one
request each; :class:`~chatclient.retrieval.EmbeddingModel` batches and checks), ``close``/``aclose``
and the context managers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import httpx2
from typing_extensions import Unpack

from chatclient.errors import ConfigurationError, MalformedResponseError
from chatclient.retrieval.embedding import Embedding, EmbeddingModel

from ._errors import ErrorDetails
from ._provider import Provider, ProviderArgs
from ._transport import ModelLifecycle

__all__ = ["ProviderEmbeddingModel", "malformed"]


def malformed(provider: str, what: str, data: Any) -> MalformedResponseError:
    return MalformedResponseError(f"The embeddings reply {what}", provider=provider, body=data)


class ProviderEmbeddingModel(ModelLifecycle, EmbeddingModel):
    """An :class:`~chatclient.retrieval.EmbeddingModel` that posts to ``{base_url}{path}``."""

    path: ClassVar[str]
    wire_name: ClassVar[str]
    """The provider's name in errors (``ProviderError.provider``)."""
    provider_class: ClassVar[type[Provider]] = Provider

    def __init__(
        self,
        model: str,
        *,
        error_details: Callable[[Any], ErrorDetails | None],
        dimensions: int | None = None,
        max_batch_size: int | None = None,
        provider: Provider | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"{type(self).__name__} needs a model name, got {model!r}")
        if dimensions is not None and (isinstance(dimensions, bool) or dimensions < 1):
            raise ConfigurationError(f"dimensions must be a positive integer, got {dimensions!r}")
        if provider is None:
            provider = self.provider_class(**provider_args)
        elif provider_args:
            raise TypeError(
                f"{type(self).__name__}: pass provider= or its settings ({', '.join(provider_args)}), not both"
            )
        if provider.via_sdk:
            raise ConfigurationError(
                f"{type(self).__name__} talks over httpx2, not an SDK client: pass http_client= instead of client="
            )
        self.model, self.dimensions, self.provider = model, dimensions, provider
        if max_batch_size is not None:
            self.max_batch_size = max_batch_size
        self._http = provider.open_http(self.wire_name, error_details)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, {self.provider.describe()})"

    @property
    def base_url(self) -> str:
        return self.provider.base_url

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: Any, count: int) -> list[Embedding]:
        """The vectors of a reply to ``count`` texts, in the order the texts were sent."""
        raise NotImplementedError

    def embed_batch(self, texts: list[str]) -> list[Embedding]:
        data, _ = self._http.post_json(self.path, self.build_body(texts))
        return self.parse(data, len(texts))

    async def aembed_batch(self, texts: list[str]) -> list[Embedding]:
        count = len(texts)

        def parse(data: Any, headers: httpx2.Headers) -> list[Embedding]:
            return self.parse(data, count)

        return await self._http.apost_parsed(self.path, self.build_body(texts), None, parse)
