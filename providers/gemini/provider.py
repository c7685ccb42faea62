"""``GeminiProvider`` (the Gemini API, an API key) and ``VertexProvider`` (Vertex AI, a Bearer token)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpx2

from chatclient._redact import CREDENTIAL_HEADERS
from chatclient.errors import ConfigurationError
from providers._provider import Provider
from providers._retry import RetryPolicy

__all__ = ["DEFAULT_BASE_URL", "GeminiProvider", "VertexProvider", "vertex_base_url"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_VERTEX_DOMAIN = "aiplatform.googleapis.com"


class GeminiProvider(Provider):
    """The Gemini API: the key from ``api_key``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (sent as
    ``x-goog-api-key``, never in the URL, where logs would keep it), the base URL with its API
    version from ``base_url``, ``GEMINI_BASE_URL`` or :data:`DEFAULT_BASE_URL`. Google's SDK client is
    not taken: it is no HTTP client this shell can send through."""

    vendor = "Gemini"
    key_env = "GEMINI_API_KEY"
    base_url_env = "GEMINI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    vendor_hosts = frozenset({"generativelanguage.googleapis.com"})
    key_header = "x-goog-api-key"
    key_prefix = ""
    env_key_own_host_only = True
    takes_sdk_client = False

    def _env_key(self, base_url: str | None) -> str | None:
        found = super()._env_key(base_url)
        if found is None and (base_url is None or _host(base_url) in self.vendor_hosts):
            return os.environ.get("GOOGLE_API_KEY")  # the other name Google's own SDK reads
        return found


class VertexProvider(Provider):
    """Vertex AI: ``project`` and ``location`` make the base URL (:func:`vertex_base_url`) unless
    ``base_url`` is given. The credential is an OAuth access token sent as ``Authorization: Bearer``:
    ``api_key=`` (or ``GOOGLE_CLOUD_ACCESS_TOKEN``), or an ``http_client``/``async_http_client`` whose
    ``auth`` adds and refreshes it (access tokens expire within the hour)."""

    vendor = "Vertex AI"
    key_env = "GOOGLE_CLOUD_ACCESS_TOKEN"
    vendor_hosts = frozenset({_VERTEX_DOMAIN})
    env_key_own_host_only = True
    takes_sdk_client = False

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        project: str | None = None,
        location: str = "global",
        api_version: str = "v1",
        headers: Any = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if base_url is None:
            if not project:
                raise ConfigurationError("VertexProvider: pass project= (and location=), or base_url=")
            base_url = vertex_base_url(project, location, api_version)
        super().__init__(api_key, base_url, headers=headers, http_client=http_client,
                         async_http_client=async_http_client, timeout=timeout, retry=retry)  # fmt: skip

    def _env_key(self, base_url: str | None) -> str | None:
        if base_url is not None and not _vertex_host(base_url):
            return None  # another server (a gateway): the Google token stays home
        return os.environ.get("GOOGLE_CLOUD_ACCESS_TOKEN")

    def _require_key(self, clients: Iterable[httpx2.Client | httpx2.AsyncClient | None]) -> None:
        if not _vertex_host(self.base_url):
            return
        for c in clients:
            if c is not None and (c.auth is not None or any(h in c.headers for h in CREDENTIAL_HEADERS)):
                return
        raise ConfigurationError(
            "No Vertex AI access token: pass api_key= (e.g. the output of `gcloud auth print-access-token`), "
            "set GOOGLE_CLOUD_ACCESS_TOKEN, or pass an http_client whose auth adds the token"
        )


def vertex_base_url(project: str, location: str = "global", api_version: str = "v1") -> str:
    """Where a Vertex AI project's Google models answer:
    ``https://{location}-aiplatform.googleapis.com/{api_version}/projects/{project}/locations/{location}/publishers/google``
    (the ``global`` location's host has no prefix)."""
    for name, value in (("project", project), ("location", location), ("api_version", api_version)):
        if not value or any(c in value for c in "/?#@: "):
            raise ConfigurationError(f"VertexProvider: {name} {value!r} is not a plain name")
    host = _VERTEX_DOMAIN if location == "global" else f"{location}-{_VERTEX_DOMAIN}"
    return f"https://{host}/{api_version}/projects/{project}/locations/{location}/publishers/google"


def _host(url: str) -> str:
    return (urlsplit(url if "://" in url else f"//{url}").hostname or "").lower()


def _vertex_host(url: str) -> bool:
    host = _host(url)
    return host == _VERTEX_DOMAIN or host.endswith(f"-{_VERTEX_DOMAIN}")
