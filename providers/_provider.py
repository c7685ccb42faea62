"""The provider object: who a model talks to and how it gets in, one class per vendor.

A :class:`Provider` resolves the vendor's API key (argument, else its environment variable), its base
URL (argument, else its environment variable, else the vendor's default), the official SDK client
when one is given, and the transport built from them; it is what a model shows in its repr. The
model beside it keeps the wire mapping. A vendor's provider is a few lines of data (see
``providers/openai/provider.py``); the rules below are written once:

- the key: ``api_key=`` wins; else the environment variable, which for a vendor whose key must
  not reach other servers (:attr:`Provider.env_key_own_host_only`) is read only for the vendor's own
  host or for the base URL set in the environment beside it. ``api_key=""`` is a deliberate "send
  none" (a gateway in front adds the credential);
- a missing key is a ``ConfigurationError`` when the provider is built, for the vendor's own hosts
  only: another server (a local one, a gateway) may need no key. An SDK client, a credential header
  or an injected httpx2 client that authenticates by itself count as a key;
- ``headers=`` are sent with every request; credential names among them (and any
  :class:`~providers._secrets.Secret` value) are held as secrets, masked in every repr.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict
from urllib.parse import urlsplit

import httpx2

from chatclient._redact import CREDENTIAL_HEADERS, redact_url
from chatclient.errors import ConfigurationError

from ._retry import RetryPolicy
from ._secrets import Secret
from ._transport import ProviderHttp, check_base_url

if TYPE_CHECKING:
    from ._errors import ErrorDetails
    from ._wire import WireMapping

__all__ = ["Provider", "ProviderArgs"]


class ProviderArgs(TypedDict, total=False):
    """The keywords a model passes on to its provider (``OpenAIChatModel("m", api_key=...)``)."""

    api_key: str | None
    base_url: str | None
    headers: Mapping[str, str | Secret] | None
    http_client: httpx2.Client | None
    async_http_client: httpx2.AsyncClient | None
    client: Any
    async_client: Any
    timeout: float | httpx2.Timeout
    retry: RetryPolicy | None


class Provider:
    """A vendor's endpoint and credentials, and the transport to it.

    Subclasses set the class attributes; a plain ``Provider(base_url=..., headers=...)`` serves a
    plugin or a server that needs none of them. One provider may serve several models: each model
    opens its own transport from it (its own connection pools, closed with the model).
    """

    vendor: ClassVar[str] = "the provider"
    """The vendor's name in messages (``"OpenAI"``)."""
    service: ClassVar[str] = ""
    """What its own hosts are called in the missing-key message (``"Ollama Cloud"``); the vendor's name if empty."""
    key_env: ClassVar[str | None] = None
    base_url_env: ClassVar[str | None] = None
    default_base_url: ClassVar[str | None] = None
    vendor_hosts: ClassVar[frozenset[str]] = frozenset()
    """The vendor's own hosts: a request there without a key can only fail."""
    key_header: ClassVar[str] = "authorization"
    key_prefix: ClassVar[str] = "Bearer "
    env_key_own_host_only: ClassVar[bool] = False
    """Read the key's environment variable only for the vendor's hosts or the environment's base URL."""
    takes_sdk_client: ClassVar[bool] = True

    base_url: str
    """Where requests go (an SDK client's own base URL when one is given)."""
    sdk_client: Any
    async_sdk_client: Any

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        headers: Mapping[str, str | Secret] | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        async_client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if (client is not None or async_client is not None) and not self.takes_sdk_client:
            raise ConfigurationError(f"{type(self).__name__} takes no SDK client: pass http_client= instead")
        if client is not None and async_client is None and _is_async_client(client):
            client, async_client = None, client  # ``client=`` takes either kind
        self.sdk_client, self.async_sdk_client = client, async_client
        self.http_client, self.async_http_client = http_client, async_http_client
        self.timeout, self.retry = timeout, retry
        env_base = _env(self.base_url_env)
        chosen = base_url if base_url is not None else env_base or self.default_base_url
        self.plain_headers, self.secret_headers = _split_headers(headers)
        key = api_key if api_key is not None else self._env_key(base_url)
        if key is not None:
            value = f"{self.key_prefix}{key}" if key else ""
            self.secret_headers[self.key_header] = Secret(value)
        sdk = client if client is not None else async_client
        if sdk is not None:
            self.base_url = str(sdk.base_url).rstrip("/")
            return
        if chosen is None:
            raise ConfigurationError(f"{type(self).__name__}: pass base_url=")
        self.base_url = check_base_url(self.clean_base_url(chosen), provider=type(self).__name__)
        if not self.secret_headers:
            self._require_key((http_client, async_http_client))

    def clean_base_url(self, url: str) -> str:
        """The base URL as requests use it (a vendor may read its own shorthand, e.g. ``host:port``)."""
        return url.rstrip("/")

    @property
    def via_sdk(self) -> bool:
        return self.sdk_client is not None or self.async_sdk_client is not None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    def describe(self) -> str:
        """``base_url='…'`` (masked), and the SDK client's class when requests go through one."""
        sdk = self.sdk_client if self.sdk_client is not None else self.async_sdk_client
        via = f", client={type(sdk).__name__}" if sdk is not None else ""
        return f"base_url={redact_url(self.base_url)!r}{via}"

    def open(self, wire: WireMapping, headers: Mapping[str, str] | None = None) -> tuple[ProviderHttp, ProviderHttp]:
        """A transport for one model of ``wire``: ``(httpx2 transport, the one requests go through)``,
        the second being the SDK's when a client was given. ``headers``: the model's own (a version)."""
        http = self.open_http(wire.provider, wire.error_details, accept=wire.accept, headers=headers)
        if not self.via_sdk:
            return http, http
        from ._sdk import SdkTransport

        sdk = SdkTransport(
            provider=wire.provider,
            error_details=wire.error_details,
            client=self.sdk_client,
            async_client=self.async_sdk_client,
            retry=self.retry,
        )
        return http, sdk

    def open_http(
        self,
        name: str,
        error_details: Callable[[Any], ErrorDetails | None],
        *,
        accept: str | None = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> ProviderHttp:
        """The httpx2 transport alone, for an API that is not a chat wire (embeddings): the same
        key, headers, clients, timeout and retries. ``name`` is the provider in its errors."""
        plain = {**(headers or {}), **self.plain_headers}
        return ProviderHttp(
            provider=name,
            base_url=self.base_url,
            headers={"accept": accept, **plain} if accept else plain,
            secret_headers=self.secret_headers,
            error_details=error_details,
            http_client=self.http_client,
            async_http_client=self.async_http_client,
            timeout=self.timeout,
            retry=self.retry,
            sign=self.request_signer(),
        )

    def request_signer(self) -> Callable[[httpx2.Request], None] | None:
        """What signs each request, for a vendor whose requests are signed (none by default)."""
        return None

    def _env_key(self, base_url: str | None) -> str | None:
        if self.key_env is None:
            return None
        if self.env_key_own_host_only and base_url is not None and _host(base_url) not in self.vendor_hosts:
            return None  # an explicit base_url to another server: the vendor's key stays home
        return _env(self.key_env)

    def _require_key(self, clients: Iterable[httpx2.Client | httpx2.AsyncClient | None]) -> None:
        """Refuse, when built rather than as a 401 on the first request, a provider for the vendor's
        own host with no key, unless an injected client authenticates by itself."""
        if _host(self.base_url) not in self.vendor_hosts:
            return
        for c in clients:
            if c is not None and (c.auth is not None or any(h in c.headers for h in CREDENTIAL_HEADERS)):
                return
        url = redact_url(self.base_url)
        where = f"{self.service} ({url})" if self.service else url
        own = f" or set {self.base_url_env}" if self.base_url_env else ""
        raise ConfigurationError(
            f"No {self.vendor} API key for {where}: pass api_key= or set "
            f"{self.key_env} (for a server of your own, pass its base_url={own})"
        )


def _env(name: str | None) -> str | None:
    return os.environ.get(name) if name else None


def _host(url: str) -> str:
    return (urlsplit(url if "://" in url else f"//{url}").hostname or "").lower()


def _split_headers(headers: Mapping[str, str | Secret] | None) -> tuple[dict[str, str], dict[str, Secret]]:
    plain: dict[str, str] = {}
    secret: dict[str, Secret] = {}
    for name, value in (headers or {}).items():
        if isinstance(value, Secret):
            secret[name.lower()] = value
        elif name.lower() in CREDENTIAL_HEADERS:
            secret[name.lower()] = Secret(value)
        else:
            plain[name] = value
    return plain, secret


def _is_async_client(client: Any) -> bool:
    from ._sdk import is_async_client

    return is_async_client(client)
