"""``OpenAIResponsesChatModel``: chatclient on OpenAI's ``POST /v1/responses``."""

from __future__ import annotations

import os
from typing import Any

import httpx2

from chatclient._redact import redact_url
from chatclient.errors import ConfigurationError
from providers._retry import RetryPolicy
from providers._secrets import Secret
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OpenAIResponsesChatOptions

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIResponsesChatModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-5-mini"
_PATH = "/responses"


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser(headers.get("x-request-id"))


WIRE = WireMapping(PROVIDER, _PATH, build_request, parse_response, error_details,
                   stream_decoder=_stream_parser)  # fmt: skip


class OpenAIResponsesChatModel(ProviderModel[OpenAIResponsesChatOptions]):
    """OpenAI's Responses API, stateless by default (``store: false``): every request carries the
    whole conversation, reasoning items included (as ``encrypted_content``), so any replica and any
    memory advisor can continue it.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``, the base URL from ``base_url``,
    ``OPENAI_BASE_URL`` or :data:`DEFAULT_BASE_URL`, both read here, once. Pass ``client`` (an
    ``openai.OpenAI`` or ``openai.AsyncOpenAI``) to send through the official SDK instead, with its
    own auth, base URL and retries (``api_key``, ``base_url`` and ``http_client`` then do not apply;
    a deadline, ``retry``'s or a request's ``timeout``, still holds: see :mod:`providers._sdk`).
    """

    wire = WIRE

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: OpenAIResponsesChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        options = options or OpenAIResponsesChatOptions()
        values = options._set_values()
        values["model"] = model or options.model or DEFAULT_MODEL
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if client is None and not key and self._base_url == DEFAULT_BASE_URL:
            raise ConfigurationError("No OpenAI API key: pass api_key= or set OPENAI_API_KEY")
        super().__init__(
            defaults=type(options)(**values),
            base_url=self._base_url,
            secret_headers={"authorization": Secret(f"Bearer {key}")} if key else None,
            http_client=http_client,
            async_http_client=async_http_client,
            client=client,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        transport = "sdk" if self.via_sdk else redact_url(self._base_url)
        return f"{type(self).__name__}(model={self._defaults.model!r}, transport={transport!r})"
