"""``OllamaChatModel``: Ollama's native ``POST /api/chat`` (local servers and Ollama Cloud)."""

from __future__ import annotations

import os

import httpx2

from chatclient._redact import redact_url
from chatclient.options import ChatOptions

from .._retry import RetryPolicy
from .._secrets import Secret
from .._shell import ProviderModel, StreamDecoder, WireMapping
from ._mapping import PROVIDER, build_request, error_details, parse_response
from .options import OllamaChatOptions

__all__ = ["DEFAULT_BASE_URL", "OllamaChatModel", "normalize_host"]

DEFAULT_BASE_URL = "http://localhost:11434"
CLOUD_HOST = "ollama.com"
"""Ollama Cloud's host: the one server where a request without a key can only fail."""
_PATH = "/api/chat"
_BIND_ALL = {"0.0.0.0", "::"}


def normalize_host(value: str) -> str:
    """A base URL from an ``OLLAMA_HOST``-style value, read the way the ``ollama`` CLI reads it.

    ``host:port`` and a bare ``host`` get ``http://`` (a bare host also port 11434), ``ollama.com``
    means ``https://ollama.com``, and the bind-all addresses a server listens on (``0.0.0.0``,
    ``::``) are reached through ``localhost``. An explicit scheme keeps its own default port.
    """
    value = value.strip().rstrip("/")
    if not value:
        return DEFAULT_BASE_URL
    if value == "ollama.com":
        return "https://ollama.com"
    scheme, has_scheme, rest = value.partition("://")
    if not has_scheme:
        scheme, rest = "http", value
    hostport, slash, path = rest.partition("/")
    userinfo, at, hostport = hostport.rpartition("@")  # ``user:password@`` (a proxy in front) stays as given
    host, port = _split_host_port(hostport)
    if host in _BIND_ALL:
        host = "localhost"
    elif ":" in host:
        host = f"[{host}]"
    if port is None and not has_scheme:
        port = "11434"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{scheme}://{userinfo}{at}{netloc}{slash}{path}".rstrip("/")


def _split_host_port(hostport: str) -> tuple[str, str | None]:
    """``host``/``port`` (``None`` when absent) of ``host:port``, ``[v6]:port``, ``v6`` or ``host``."""
    if hostport.startswith("["):
        host, _, tail = hostport[1:].partition("]")
        return host, tail[1:] if tail.startswith(":") and tail[1:].isdigit() else None
    if hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
        if port.isdigit():
            return host or "localhost", port
    return hostport or "localhost", None


def _stream_parser(_: httpx2.Headers) -> StreamDecoder:
    from ._stream_parser import StreamParser  # with the first stream: a plain call loads no stream events

    return StreamParser()


WIRE = WireMapping(PROVIDER, _PATH, build_request, parse_response, error_details, _stream_parser,
                   framing="ndjson", accept="application/json, application/x-ndjson")  # fmt: skip


class OllamaChatModel(ProviderModel[OllamaChatOptions]):
    """Chat with a model served by Ollama through its native API.

    ``base_url`` defaults to ``$OLLAMA_HOST`` (``host:port`` is fine) or ``http://localhost:11434``.
    A local server needs no key; Ollama Cloud takes ``api_key`` (or ``$OLLAMA_API_KEY``) as a Bearer
    token, and a model for it without one is refused when built (``ConfigurationError``).
    ``format`` gets ``output_schema`` as a JSON schema, so native structured output works.
    """

    wire = WIRE

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: ChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        own = OllamaChatOptions(model=model) if model is not None else OllamaChatOptions()
        defaults = own.merged_over(options)  # any ChatOptions becomes OllamaChatOptions; model= wins
        assert isinstance(defaults, OllamaChatOptions)
        key = api_key if api_key is not None else os.environ.get("OLLAMA_API_KEY")
        super().__init__(
            defaults=defaults,
            base_url=normalize_host(base_url if base_url is not None else os.environ.get("OLLAMA_HOST", "")),
            # ``api_key=""`` is a deliberate "send none" (a gateway in front adds the credential)
            secret_headers={"authorization": Secret(f"Bearer {key}" if key else "")} if key is not None else None,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            retry=retry,
            vendor_hosts=(CLOUD_HOST,),
            missing_key="No Ollama API key for Ollama Cloud (https://ollama.com): pass api_key= or set "
            "OLLAMA_API_KEY (for a server of your own, pass its base_url= or set OLLAMA_HOST)",
        )

    def __repr__(self) -> str:
        return f"OllamaChatModel(model={self._defaults.model!r}, base_url={redact_url(self._http.base_url)!r})"

    @property
    def base_url(self) -> str:
        return self._http.base_url
