"""``OpenAIResponsesChatModel``: chatclient on OpenAI's ``POST /v1/responses``."""

from __future__ import annotations

from typing import ClassVar

import httpx2
from typing_extensions import Unpack

from providers._provider import Provider, ProviderArgs
from providers._shell import ProviderModel, StreamDecoder, WireMapping
from providers.openai.provider import DEFAULT_BASE_URL, OpenAIProvider

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OpenAIResponsesChatOptions

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIResponsesChatModel"]

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

    Who it talks to is an :class:`~providers.openai.provider.OpenAIProvider` (the same key and base
    URL rules as ``OpenAIChatModel``): pass ``provider=``, or its keywords here. Pass ``client`` (an
    ``openai.OpenAI`` or ``openai.AsyncOpenAI``) to send through the official SDK instead, with its
    own auth, base URL and retries (a deadline, ``retry``'s or a request's ``timeout``, still holds:
    see :mod:`providers._sdk`).
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = OpenAIProvider

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: OpenAIResponsesChatOptions | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        options = options or OpenAIResponsesChatOptions()
        values = options._set_values()
        values["model"] = model or options.model or DEFAULT_MODEL
        super().__init__(defaults=type(options)(**values), provider=provider, **provider_args)
