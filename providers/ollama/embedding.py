"""``OllamaEmbeddingModel``: Ollama's native ``POST /api/embed`` (a list of inputs in, a list of
vectors out, in order). For its OpenAI-compatible ``/v1/embeddings`` use
:class:`~providers.openai.embedding.OpenAIEmbeddingModel` with ``base_url=".../v1"``."""

from __future__ import annotations

from typing import Any, ClassVar

from typing_extensions import Unpack

from chatclient.retrieval.embedding import Embedding
from providers._embedding import ProviderEmbeddingModel, malformed
from providers._provider import Provider, ProviderArgs

from ._mapping import error_details
from .provider import OllamaProvider

__all__ = ["OllamaEmbeddingModel"]

_PROVIDER = "ollama"


class OllamaEmbeddingModel(ProviderEmbeddingModel):
    """Embeddings from a local Ollama server (or Ollama Cloud), from an
    :class:`~providers.ollama.OllamaProvider` (``provider=``, or ``base_url``, ``api_key``, ...).
    ``truncate=False`` makes an input longer than the model's context an error instead of cut;
    ``keep_alive`` is how long the server keeps the model loaded (Ollama's duration, e.g. ``"5m"``)."""

    path = "/api/embed"
    wire_name = _PROVIDER
    provider_class: ClassVar[type[Provider]] = OllamaProvider
    max_batch_size = 512

    def __init__(
        self,
        model: str,
        *,
        dimensions: int | None = None,
        truncate: bool | None = None,
        keep_alive: str | int | None = None,
        max_batch_size: int | None = None,
        provider: Provider | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        super().__init__(
            model,
            error_details=error_details,
            dimensions=dimensions,
            max_batch_size=max_batch_size,
            provider=provider,
            **provider_args,
        )
        self.truncate, self.keep_alive = truncate, keep_alive

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        if self.truncate is not None:
            body["truncate"] = self.truncate
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        return body

    def parse(self, data: Any, count: int) -> list[Embedding]:
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or not all(
            isinstance(v, list) and all(isinstance(x, (int, float)) for x in v) for v in vectors
        ):
            raise malformed(_PROVIDER, "has no list of embeddings", data)
        if len(vectors) != count:
            raise malformed(_PROVIDER, f"has {len(vectors)} embeddings for {count} inputs", data)
        return [[float(x) for x in v] for v in vectors]
