"""``AnthropicChatModel``: the Messages API (``POST /v1/messages``) over httpx2 or the official SDK."""

from __future__ import annotations

import os
from typing import Any

import httpx2

from chatclient._redact import redact_url
from chatclient.errors import ConfigurationError
from chatclient.options import ChatOptions
from providers._extras import extra_headers
from providers._retry import RetryPolicy
from providers._secrets import Secret
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import AnthropicChatOptions

__all__ = ["DEFAULT_ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicChatModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"
MESSAGES_PATH = "/v1/messages"


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser(headers.get("request-id"))


WIRE = WireMapping(PROVIDER, MESSAGES_PATH, build_request, parse_response, error_details, accept=None,
                   stream_decoder=_stream_parser)  # fmt: skip


class AnthropicChatModel(ProviderModel[AnthropicChatOptions]):
    """Claude through the Messages API.

    The API key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (read here, once) and the base URL from
    ``base_url``, ``ANTHROPIC_BASE_URL`` or ``https://api.anthropic.com``. Pass ``http_client`` /
    ``async_http_client`` to share httpx2 clients, or ``client=`` an ``anthropic.Anthropic`` /
    ``AsyncAnthropic`` to send the same requests through the official SDK (its auth, proxies and
    headers then apply; ``api_key`` and ``base_url`` are not used; its retries apply unless a
    deadline does, see :mod:`providers._sdk`).
    """

    wire = WIRE
    _no_extra_headers: ChatOptions | None = None
    """The last merged options whose request needs no headers of its own (held, so ``is`` is safe)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: AnthropicChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if key is None and client is None:
            raise ConfigurationError("No Anthropic API key: pass api_key= or set ANTHROPIC_API_KEY")
        self._base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        defaults = options if options is not None else AnthropicChatOptions()
        if model is not None:
            defaults = defaults.model_copy(update={"model": model})  # the argument wins
        self._default_headers = _header_key(defaults)
        super().__init__(
            defaults=defaults,
            base_url=self._base_url,
            headers=_version_headers(self._default_headers),
            secret_headers={"x-api-key": Secret(key or "")},
            http_client=http_client,
            async_http_client=async_http_client,
            client=client,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        sdk = self._sdk_sync if self._sdk_sync is not None else self._sdk_async
        via = f", client={type(sdk).__name__}" if sdk is not None else ""
        return f"AnthropicChatModel(model={self._defaults.model!r}, base_url={redact_url(self._base_url)!r}{via})"

    def request_headers(self, options: ChatOptions) -> dict[str, str] | None:
        """The version/beta headers when this request's differ from the model's (always through the
        SDK, whose newer default version this mapping does not speak), then the extra headers."""
        if options is self._no_extra_headers:  # the same merged options as a request before, which needed none
            return None
        key = _header_key(options)
        headers = None if key == self._default_headers and not self.via_sdk else _version_headers(key)
        extra = extra_headers(options)
        if extra:
            headers = {**(headers or {}), **extra}
        if headers is None:
            self._no_extra_headers = options  # options are frozen: the answer holds for this object
        return headers

    def no_sync_sdk_client(self) -> None:
        raise ConfigurationError(
            "AnthropicChatModel was given an async SDK client (AsyncAnthropic): use acall/astream, "
            "or pass an anthropic.Anthropic client for call/stream"
        )


def _header_key(options: ChatOptions) -> tuple[str, tuple[str, ...]]:
    if isinstance(options, AnthropicChatOptions):
        return options.anthropic_version or DEFAULT_ANTHROPIC_VERSION, options.anthropic_beta or ()
    return DEFAULT_ANTHROPIC_VERSION, ()


def _version_headers(key: tuple[str, tuple[str, ...]]) -> dict[str, str]:
    version, betas = key
    headers = {"anthropic-version": version}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return headers
