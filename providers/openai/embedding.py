"""``OpenAIEmbeddingModel``: ``POST /embeddings`` of OpenAI and every server that speaks it
(Azure OpenAI's ``/openai/v1``, Ollama's ``/v1``, vLLM, LM Studio).

The reply's vectors come back as JSON floats or, with ``encoding_format="base64"``, as base64 of
little-endian float32 (a third of the bytes; what OpenAI's own SDK asks for); both are read. Each
vector carries its ``index``, and the vectors are put back in that order.
"""

from __future__ import annotations

import base64
import sys
from array import array
from typing import Any, ClassVar, Literal

from typing_extensions import Unpack

from chatclient.errors import ConfigurationError
from chatclient.retrieval.embedding import Embedding
from providers._embedding import ProviderEmbeddingModel, malformed
from providers._provider import Provider, ProviderArgs

from ._mapping import error_details
from .provider import OpenAIProvider

__all__ = ["DEFAULT_EMBEDDING_MODEL", "OpenAIEmbeddingModel"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
_PROVIDER = "openai"
MAX_INPUTS = 2048
"""OpenAI's limit on inputs per request."""


def _from_base64(text: str) -> list[float]:
    values = array("f")
    values.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


class OpenAIEmbeddingModel(ProviderEmbeddingModel):
    """Embeddings over httpx2, from an :class:`~providers.openai.OpenAIProvider` (``provider=``, or
    its keywords: ``api_key``, ``base_url``, ``headers``, ``http_client``, ``timeout``, ``retry``).
    ``dimensions`` asks the text-embedding-3 models for shorter vectors (sent only when given)."""

    path = "/embeddings"
    wire_name = _PROVIDER
    provider_class: ClassVar[type[Provider]] = OpenAIProvider
    max_batch_size = MAX_INPUTS

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        dimensions: int | None = None,
        encoding_format: Literal["float", "base64"] = "float",
        max_batch_size: int | None = None,
        provider: Provider | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        if encoding_format not in ("float", "base64"):
            raise ConfigurationError(f"encoding_format is 'float' or 'base64', got {encoding_format!r}")
        super().__init__(
            model,
            error_details=error_details,
            dimensions=dimensions,
            max_batch_size=max_batch_size,
            provider=provider,
            **provider_args,
        )
        self.encoding_format = encoding_format

    def build_body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": self.encoding_format}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    def parse(self, data: Any, count: int) -> list[Embedding]:
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise malformed(_PROVIDER, "has no data list", data)
        vectors: list[Embedding | None] = [None] * count
        for position, item in enumerate(items):
            index = item.get("index", position) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or vectors[index] is not None:
                raise malformed(_PROVIDER, f"has an item with a bad or repeated index: {index!r}", data)
            raw = item.get("embedding")
            if isinstance(raw, str):
                try:
                    vectors[index] = _from_base64(raw)
                except ValueError as exc:
                    raise malformed(_PROVIDER, "has an embedding that is not base64 float32", data) from exc
            elif isinstance(raw, list) and all(isinstance(x, (int, float)) for x in raw):
                vectors[index] = [float(x) for x in raw]
            else:
                raise malformed(_PROVIDER, "has an embedding that is neither a list of numbers nor base64", data)
        if any(v is None for v in vectors):
            raise malformed(_PROVIDER, f"has {len(items)} embeddings for {count} inputs", data)
        return vectors  # type: ignore[return-value]  # every slot filled, checked above
