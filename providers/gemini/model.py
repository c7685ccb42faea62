"""``GeminiChatModel``: Google's ``generateContent`` / ``streamGenerateContent`` over httpx2, on the
Gemini API (an API key) or Vertex AI (a project, a location and a Bearer token)."""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import quote

import httpx2
from typing_extensions import Unpack

from chatclient.errors import ConfigurationError
from chatclient.options import ChatOptions
from providers._provider import Provider, ProviderArgs
from providers._shell import ProviderModel, StreamDecoder, WireMapping

from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import GeminiChatOptions
from .provider import DEFAULT_BASE_URL, GeminiProvider, VertexProvider

__all__ = ["DEFAULT_BASE_URL", "GeminiChatModel"]


def _stream_parser(headers: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser()


WIRE = WireMapping(PROVIDER, "/models/{model}:generateContent", build_request, parse_response, error_details,
                   stream_decoder=_stream_parser)  # fmt: skip
"""``path`` is a template: the model is in the URL (:meth:`GeminiChatModel.request_path`)."""


class GeminiChatModel(ProviderModel[GeminiChatOptions]):
    """Gemini through ``generateContent``.

    Who it talks to is a :class:`~providers.gemini.provider.GeminiProvider` (``api_key`` or
    ``GEMINI_API_KEY``/``GOOGLE_API_KEY``, ``base_url`` or ``GEMINI_BASE_URL``), or with
    ``vertex_project=`` (and ``vertex_location=``, ``global`` by default) a
    :class:`~providers.gemini.provider.VertexProvider` (``api_key`` is then the access token, or
    ``GOOGLE_CLOUD_ACCESS_TOKEN``); or pass ``provider=``. ``http_client``/``async_http_client`` share
    httpx2 clients (on Vertex, one whose ``auth`` refreshes the token).
    """

    wire = WIRE
    provider_class: ClassVar[type[Provider]] = GeminiProvider

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        options: GeminiChatOptions | None = None,
        vertex_project: str | None = None,
        vertex_location: str | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        defaults = options if options is not None else GeminiChatOptions()
        if model is not None:
            defaults = defaults.model_copy(update={"model": model})  # the argument wins
        if vertex_project is not None or vertex_location is not None:
            if provider is not None:
                raise TypeError("GeminiChatModel: pass provider= or vertex_project=/vertex_location=, not both")
            if not vertex_project:
                raise ConfigurationError("GeminiChatModel: vertex_location= needs vertex_project=")
            if provider_args.get("client") is not None or provider_args.get("async_client") is not None:
                raise ConfigurationError("VertexProvider takes no SDK client: pass http_client= instead")
            provider = VertexProvider(
                provider_args.get("api_key"),
                provider_args.get("base_url"),
                project=vertex_project,
                location=vertex_location or "global",
                headers=provider_args.get("headers"),
                http_client=provider_args.get("http_client"),
                async_http_client=provider_args.get("async_http_client"),
                timeout=provider_args.get("timeout", 600.0),
                retry=provider_args.get("retry"),
            )
            provider_args = {}
        self._paths: dict[tuple[str, bool], str] = {}
        super().__init__(defaults=defaults, provider=provider, **provider_args)

    @property
    def provider_name(self) -> str:
        """``gen_ai.provider.name`` in traces (OpenTelemetry's names for the two Google services)."""
        return "gcp.vertex_ai" if isinstance(self.provider, VertexProvider) else "gcp.gemini"

    def request_path(self, options: ChatOptions, *, stream: bool) -> str:
        """``/models/<model>:generateContent``, or ``:streamGenerateContent?alt=sse`` for a stream."""
        model = options.model or ""
        path = self._paths.get((model, stream))
        if path is None:
            if not model:
                raise ConfigurationError("No Gemini model given: pass model= to GeminiChatModel or set options.model")
            name = quote(model.removeprefix("models/"), safe="-._~")
            method = "streamGenerateContent?alt=sse" if stream else "generateContent"
            path = self._paths[(model, stream)] = f"/models/{name}:{method}"
        return path
