"""``OllamaChatModel``: Ollama's native ``POST /api/chat`` (local servers and Ollama Cloud)."""

from __future__ import annotations

from typing import ClassVar

import httpx2
from typing_extensions import Unpack

from chatclient.options import ChatOptions

from .._provider import Provider, ProviderArgs
from .._shell import ProviderModel, StreamDecoder, WireMapping
from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OllamaChatOptions
from .provider import DEFAULT_BASE_URL, OllamaProvider, normalize_host

__all__ = ["DEFAULT_BASE_URL", "OllamaChatModel", "normalize_host"]

_PATH = "/api/chat"


def _stream_parser(_: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser()


WIRE = WireMapping(PROVIDER, _PATH, build_request, parse_response, error_details, _stream_parser,
                   framing="ndjson", accept="application/json, application/x-ndjson")  # fmt: skip


class OllamaChatModel(ProviderModel[OllamaChatOptions]):
    """Chat with a model served by Ollama through its native API.

    Who it talks to is an :class:`~providers.ollama.provider.OllamaProvider`: pass ``provider=``, or
    its keywords here. ``base_url`` defaults to ``$OLLAMA_HOST`` (``host:port`` is fine) or
    ``http://localhost:11434``. A local server needs no key; Ollama Cloud takes ``api_key`` (or
    ``$OLLAMA_API_KEY``) as a Bearer token, and a model for it without one is refused when built
    (``ConfigurationError``). ``format`` gets ``output_schema`` as a JSON schema, so native
    structured output works.
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = OllamaProvider

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: ChatOptions | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        own = OllamaChatOptions(model=model) if model is not None else OllamaChatOptions()
        defaults = own.merged_over(options)  # any ChatOptions becomes OllamaChatOptions; model= wins
        assert isinstance(defaults, OllamaChatOptions)
        super().__init__(defaults=defaults, provider=provider, **provider_args)
