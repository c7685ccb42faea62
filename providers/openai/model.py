"""``OpenAIChatModel``: OpenAI Chat Completions, and every server that speaks it.

``base_url`` points it at any OpenAI-compatible server: Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio, Groq, DeepSeek, Azure OpenAI's ``/openai/v1`` endpoint. Without an API key no
``Authorization`` header is sent, which is what local servers expect.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2

from chatclient._redact import CREDENTIAL_HEADERS, redact_url
from providers._retry import RetryPolicy
from providers._secrets import Secret
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OpenAIChatOptions

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIChatModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
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

    The API key comes from ``api_key`` or ``OPENAI_API_KEY``, read once here and held in a
    ``Secret``. ``OPENAI_API_KEY`` is used only for the server it belongs to: OpenAI, or the
    ``OPENAI_BASE_URL`` set beside it; an explicit ``base_url`` to another server gets no key unless
    ``api_key`` is given, so a local server never receives your OpenAI key.

    ``headers`` are sent with every request; credential headers among them (``api-key`` for Azure,
    ``authorization``) are held as secrets too. ``client``/``async_client`` take an
    ``openai.OpenAI``/``openai.AsyncOpenAI`` (or ``AzureOpenAI``): requests then go through the SDK,
    with its auth and its own retries (a deadline, ``retry``'s or a request's ``timeout``, still
    holds: see :mod:`providers._sdk`)::

        OpenAIChatModel("gpt-4o-mini")                                  # OPENAI_API_KEY
        OpenAIChatModel("qwen3", base_url="http://localhost:11434/v1")  # Ollama: no key, no header
        OpenAIChatModel("gpt-4o", base_url="https://res.openai.azure.com/openai/v1", headers={"api-key": key})
        OpenAIChatModel("gpt-4o", client=openai.AzureOpenAI(api_version=..., azure_deployment=...))
    """

    wire = WIRE

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: OpenAIChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        async_client: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        options = options or OpenAIChatOptions()
        name = model or options.model or DEFAULT_MODEL
        defaults = options if options.model == name else options.model_copy(update={"model": name})
        env_base = os.environ.get("OPENAI_BASE_URL")
        self.base_url = (base_url or env_base or DEFAULT_BASE_URL).rstrip("/")
        if api_key is None and (base_url is None or _host(base_url) == "api.openai.com"):
            api_key = os.environ.get("OPENAI_API_KEY")
        plain: dict[str, str] = {}
        secret: dict[str, Secret] = {}
        if api_key is not None:  # ``api_key=""`` is a deliberate "send none" (a gateway adds the credential)
            secret["authorization"] = Secret(f"Bearer {api_key}" if api_key else "")
        for key, value in (headers or {}).items():
            if key.lower() in CREDENTIAL_HEADERS:
                secret[key.lower()] = Secret(value)
            else:
                plain[key] = value
        super().__init__(
            defaults=defaults,
            base_url=self.base_url,
            headers=plain,
            secret_headers=secret,
            http_client=http_client,
            async_http_client=async_http_client,
            client=client,
            async_client=async_client,
            timeout=timeout,
            retry=retry,
            vendor_hosts=("api.openai.com",),
            missing_key=f"No OpenAI API key for {self.base_url}: pass api_key= or set OPENAI_API_KEY "
            "(for a server of your own, pass its base_url=)",
        )
        if self.via_sdk:
            self.base_url = self._transport.base_url
        if not _is_openai_platform(self.base_url):
            self.wire = _COMPATIBLE_WIRE

    def __repr__(self) -> str:
        via = ", via=openai-sdk" if self.via_sdk else ""
        return f"OpenAIChatModel(model={self._defaults.model!r}, base_url={redact_url(self.base_url)!r}{via})"
