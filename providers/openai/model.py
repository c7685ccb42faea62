"""``OpenAIChatModel``: OpenAI Chat Completions, and every server that speaks it.

``base_url`` points it at any OpenAI-compatible server: Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio, Groq, DeepSeek, Azure OpenAI's ``/openai/v1`` endpoint. Without an API key no
``Authorization`` header is sent, which is what local servers expect.
"""

from __future__ import annotations

import functools
from typing import ClassVar
from urllib.parse import urlsplit

import httpx2
from typing_extensions import Unpack

from providers._provider import Provider, ProviderArgs
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OpenAIChatOptions
from .provider import DEFAULT_BASE_URL, OpenAIProvider

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIChatModel"]

DEFAULT_MODEL = "gpt-4o-mini"
PATH = "/chat/completions"


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_openai_platform(url: str) -> bool:
    """OpenAI itself or Azure OpenAI: the servers that want ``max_completion_tokens``."""
    host = _host(url)
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser(headers)


WIRE = WireMapping(PROVIDER, PATH, build_request, parse_response, error_details, _stream_parser)
"""Chat Completions as OpenAI and Azure speak it (``max_completion_tokens``)."""

_COMPATIBLE_WIRE = WIRE._replace(build_request=functools.partial(build_request, openai_platform=False))
"""The same for every other server (``max_tokens``)."""


class OpenAIChatModel(ProviderModel[OpenAIChatOptions]):
    """Chat Completions over httpx2 (or over an official ``openai`` client, see ``client``).

    Who it talks to is an :class:`~providers.openai.provider.OpenAIProvider`: pass ``provider=``, or
    its keywords here (``api_key``, ``base_url``, ``headers``, ``http_client``, ``async_http_client``,
    ``client``, ``async_client``, ``timeout``, ``retry``). ``OPENAI_API_KEY`` goes only to the server
    it belongs to (OpenAI, or the ``OPENAI_BASE_URL`` set beside it), so a local server never
    receives your OpenAI key. ``headers`` are sent with every request; credential headers among them
    (``api-key`` for Azure, ``authorization``) are held as secrets. ``client``/``async_client`` take an
    ``openai.OpenAI``/``openai.AsyncOpenAI`` (or ``AzureOpenAI``): requests then go through the SDK,
    with its auth and its own retries (a deadline, ``retry``'s or a request's ``timeout``, still
    holds: see :mod:`providers._sdk`)::

        OpenAIChatModel("gpt-4o-mini")                                  # OPENAI_API_KEY
        OpenAIChatModel("qwen3", base_url="http://localhost:11434/v1")  # Ollama: no key, no header
        OpenAIChatModel("gpt-4o", base_url="https://res.openai.azure.com/openai/v1", headers={"api-key": key})
        OpenAIChatModel("gpt-4o", client=openai.AzureOpenAI(api_version=..., azure_deployment=...))
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = OpenAIProvider

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: OpenAIChatOptions | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        options = options or OpenAIChatOptions()
        name = model or options.model or DEFAULT_MODEL
        defaults = options if options.model == name else options.model_copy(update={"model": name})
        super().__init__(defaults=defaults, provider=provider, **provider_args)
        if not _is_openai_platform(self.base_url):
            self.wire = _COMPATIBLE_WIRE
