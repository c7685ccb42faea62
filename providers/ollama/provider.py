"""``OllamaProvider``: a local Ollama server, or Ollama Cloud with its key."""

from __future__ import annotations

from providers._provider import Provider

__all__ = ["CLOUD_HOST", "DEFAULT_BASE_URL", "OllamaProvider", "normalize_host"]

DEFAULT_BASE_URL = "http://localhost:11434"
CLOUD_HOST = "ollama.com"
"""Ollama Cloud's host: the one server where a request without a key can only fail."""
_BIND_ALL = {"0.0.0.0", "::"}


class OllamaProvider(Provider):
    """Ollama: ``base_url`` defaults to ``$OLLAMA_HOST`` (``host:port`` is fine, read by
    :func:`normalize_host`) or :data:`DEFAULT_BASE_URL`. A local server needs no key; Ollama Cloud
    takes ``api_key`` (or ``$OLLAMA_API_KEY``) as a Bearer token."""

    vendor = "Ollama"
    service = "Ollama Cloud"
    key_env = "OLLAMA_API_KEY"
    base_url_env = "OLLAMA_HOST"
    default_base_url = DEFAULT_BASE_URL
    vendor_hosts = frozenset({CLOUD_HOST})
    takes_sdk_client = False

    def clean_base_url(self, url: str) -> str:
        return normalize_host(url)


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
