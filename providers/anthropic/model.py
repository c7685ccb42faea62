"""``AnthropicChatModel``: the Messages API (``POST /v1/messages``) over httpx2 or the official SDK."""

from __future__ import annotations

from typing import ClassVar

import httpx2
from typing_extensions import Unpack

from chatclient.errors import ConfigurationError
from chatclient.options import ChatOptions
from providers._extras import extra_headers
from providers._provider import Provider, ProviderArgs
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import AnthropicChatOptions
from .provider import DEFAULT_BASE_URL, AnthropicProvider

__all__ = ["DEFAULT_ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicChatModel"]

DEFAULT_ANTHROPIC_VERSION = "2023-06-01"
MESSAGES_PATH = "/v1/messages"


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser(headers.get("request-id"))


WIRE = WireMapping(PROVIDER, MESSAGES_PATH, build_request, parse_response, error_details, accept=None,
                   stream_decoder=_stream_parser)  # fmt: skip


class AnthropicChatModel(ProviderModel[AnthropicChatOptions]):
    """Claude through the Messages API.

    Who it talks to is an :class:`~providers.anthropic.provider.AnthropicProvider`: pass
    ``provider=``, or its keywords here (``api_key`` or ``ANTHROPIC_API_KEY``, ``base_url`` or
    ``ANTHROPIC_BASE_URL``, ``http_client``/``async_http_client`` to share httpx2 clients, ``client=``
    an ``anthropic.Anthropic``/``AsyncAnthropic`` to send the same requests through the official SDK:
    its auth, proxies and headers then apply; its retries apply unless a deadline does, see
    :mod:`providers._sdk`).
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = AnthropicProvider
    _no_extra_headers: ChatOptions | None = None
    """The last merged options whose request needs no headers of its own (held, so ``is`` is safe)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: AnthropicChatOptions | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        defaults = options if options is not None else AnthropicChatOptions()
        if model is not None:
            defaults = defaults.model_copy(update={"model": model})  # the argument wins
        self._default_headers = _header_key(defaults)
        model_headers = _version_headers(self._default_headers)
        super().__init__(defaults=defaults, provider=provider, model_headers=model_headers, **provider_args)

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
