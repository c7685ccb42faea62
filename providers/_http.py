"""HTTP plumbing shared by the providers: httpx2 clients, retries, error mapping, secrets.

A provider is a pure translation (``Prompt`` → request JSON, response JSON/stream events →
``ChatResponse``) on top of :class:`ProviderHttp`, which owns everything that talks to the network:

- connection reuse: one ``httpx2.Client`` per model, one ``httpx2.AsyncClient`` per event loop
  (or the clients the application injects);
- retries with tenacity for retryable errors (429, 5xx, connection), honouring ``Retry-After`` /
  ``retry-after-ms`` / ``x-should-retry``, capped; a 5xx whose body says the request itself is
  invalid (a validation or chat-template error) is final; a stream is retried only while it is
  being opened, never once a byte of it has been handed to the caller;
- one error tree: every failure is a :class:`chatclient.ProviderError` subclass with the status,
  the provider's error type and request id; an API key never appears in a repr, log or message.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import httpx2
import pydantic_core

from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextLengthExceededError,
    MalformedResponseError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ServerError,
)

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")

__all__ = [
    "ErrorDetails",
    "ProviderHttp",
    "RetryPolicy",
    "Secret",
    "error_from_response",
    "transport_error",
    "parse_json",
]


class Secret:
    """A credential that never shows itself in a repr, a log line or an error message."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


class _PreparedHeaders:
    """Holds request headers that include revealed credentials, without ever showing them."""

    __slots__ = ("headers",)

    def __init__(self, headers: httpx2.Headers) -> None:
        self.headers = headers

    def __repr__(self) -> str:
        return "_PreparedHeaders(***)"


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried: exponential backoff, or what the provider asks for."""

    max_retries: int = 2
    """Retries after the first attempt (0 turns retrying off)."""
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    """A provider's ``Retry-After`` longer than this is not waited for: the error is raised."""


@dataclass(frozen=True)
class ErrorDetails:
    """What a provider's error body says, in the provider's words."""

    message: str
    error_type: str | None = None
    code: str | None = None
    request_id: str | None = None
    retryable: bool | None = None
    """Set when the body says more than the status (e.g. a 429 for an exhausted quota is final)."""


def parse_json(data: bytes | str, *, provider: str) -> Any:
    try:
        return pydantic_core.from_json(data)
    except ValueError as exc:
        preview = data[:200] if isinstance(data, str) else data[:200].decode("utf-8", "replace")
        raise MalformedResponseError(f"The reply is not valid JSON: {preview!r}", provider=provider) from exc


def _retry_after(headers: httpx2.Headers) -> float | None:
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


_FINAL_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
"""Error codes that no amount of waiting fixes, even when the status (429) says otherwise."""

_CONTEXT_HINTS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "prompt is too long",
    "too many tokens",
)


def error_from_response(
    provider: str,
    status: int,
    headers: httpx2.Headers,
    body: bytes,
    details: Callable[[Any], ErrorDetails | None],
) -> ProviderError:
    """The error for a non-2xx reply: the class from the status, the facts from body and headers."""
    parsed: Any = None
    try:
        parsed = pydantic_core.from_json(body) if body else None
    except ValueError:
        parsed = None
    found = details(parsed) if parsed is not None else None
    if found is None:
        text = body.decode("utf-8", "replace").strip()[:500]
        found = ErrorDetails(text or f"HTTP {status} with no body")
    should_retry = headers.get("x-should-retry")
    fields: dict[str, Any] = {
        "provider": provider,
        "status": status,
        "error_type": found.code or found.error_type,
        "request_id": found.request_id or headers.get("x-request-id") or headers.get("request-id"),
        "retry_after": _retry_after(headers),
        "body": parsed,
    }
    if should_retry in ("true", "false"):
        fields["retryable"] = should_retry == "true"
    if found.retryable is not None:
        fields["retryable"] = found.retryable
    elif found.code in _FINAL_CODES or found.error_type in _FINAL_CODES or "request too large" in found.message.lower():
        fields["retryable"] = False  # waiting cannot make an oversized request or an empty quota succeed
    elif status >= 500 and should_retry is None and _says_invalid_request(found):
        fields["retryable"] = False  # the same request fails the same way: sending it again cannot help
    return _error_class(status, found)(found.message, **fields)


_INVALID_REQUEST_TYPES = frozenset(
    {"invalid_request_error", "invalid_request", "validation_error", "bad_request", "template_error"}
)
_INVALID_REQUEST_HINTS = (
    "template",  # "chat template", "TemplateError", "TemplateSyntaxError"
    "jinja",
    "'dict object' has no attribute",  # Jinja's UndefinedError: a template read a field the request lacks
    "validation error",  # pydantic's "1 validation error for ChatCompletionRequest"
    "invalid request",
)
"""What a 5xx body says when the server failed on *this request* (a local server rendering its chat
template over our messages, or validating them), not on its own: such a 500 is not retried."""


def _says_invalid_request(found: ErrorDetails) -> bool:
    kinds = {kind.lower() for kind in (found.error_type, found.code) if kind}
    if kinds & _INVALID_REQUEST_TYPES:
        return True
    message = found.message.lower()
    return any(hint in message for hint in _INVALID_REQUEST_HINTS)


def _error_class(status: int, found: ErrorDetails) -> type[ProviderError]:
    hint = " ".join(filter(None, (found.message, found.error_type, found.code))).lower()
    if status in (400, 413, 422):
        if any(h in hint for h in _CONTEXT_HINTS):
            return ContextLengthExceededError
        return BadRequestError
    if status == 429 and any(h in hint for h in _CONTEXT_HINTS) and "request too large" not in hint:
        return ContextLengthExceededError
    classes: dict[int, type[ProviderError]] = {
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        408: APITimeoutError,
        429: RateLimitError,
        503: OverloadedError,
        529: OverloadedError,
    }
    if status in classes:
        return classes[status]
    if "overloaded" in hint:
        return OverloadedError
    return ServerError if status >= 500 else BadRequestError


def transport_error(provider: str, exc: httpx2.HTTPError) -> ProviderError:
    """Our error for an httpx2 transport failure (timeout, connection), for providers and SDK transports."""
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=provider)
    return APIConnectionError(f"Connection failed: {type(exc).__name__}: {exc}", provider=provider)


class ProviderHttp:
    """Sends a provider's JSON requests; owns clients, retries and error mapping."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        secret_headers: Mapping[str, Secret] | None = None,
        error_details: Callable[[Any], ErrorDetails | None],
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self._headers = dict(headers)
        self._secret_headers = dict(secret_headers or {})
        self._error_details = error_details
        self._client = http_client
        self._owns_client = http_client is None
        self._async_client = async_http_client
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._timeout = timeout
        self.retry = retry or RetryPolicy()
        self._prepared_headers: _PreparedHeaders | None = None
        self._urls: dict[str, httpx2.URL] = {}

    def __repr__(self) -> str:
        return f"ProviderHttp(provider={self.provider!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ clients

    def _request_headers(self) -> httpx2.Headers:
        """The headers of every request, built once: httpx2 copies a ``Headers`` without re-parsing."""
        prepared = self._prepared_headers
        if prepared is None:
            values = {"content-type": "application/json", **self._headers}
            values.update((k, v.reveal()) for k, v in self._secret_headers.items() if v)
            prepared = self._prepared_headers = _PreparedHeaders(httpx2.Headers(values))
        return prepared.headers

    def _url(self, path: str) -> httpx2.URL:
        """The parsed URL of ``path``, parsed once per path."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx2.URL(f"{self.base_url}{path}")
        return url

    def client(self) -> httpx2.Client:
        if self._client is None:
            self._client = httpx2.Client(timeout=self._timeout)
        return self._client

    def async_client(self) -> httpx2.AsyncClient:
        if self._async_client is not None:
            return self._async_client
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = httpx2.AsyncClient(timeout=self._timeout)
            self._async_clients[loop] = client
        return client

    def close(self) -> None:
        """Close the sync client this object created (injected clients belong to the application)."""
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Close the async client of the running loop that this object created."""
        client = self._async_clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    # ------------------------------------------------------------------ retries

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after is not None:
            return float(error.retry_after)
        backoff = self.retry.initial_backoff * (2 ** (state.attempt_number - 1))
        return float(min(self.retry.max_backoff, backoff))

    def _should_retry(self, error: BaseException) -> bool:
        if not isinstance(error, ProviderError) or not error.retryable or self.retry.max_retries == 0:
            return False
        return error.retry_after is None or error.retry_after <= self.retry.max_retry_after

    def _retry_options(self) -> dict[str, Any]:
        from tenacity import retry_if_exception, stop_after_attempt

        return {
            "stop": stop_after_attempt(self.retry.max_retries + 1),
            "wait": self._wait,
            "retry": retry_if_exception(self._should_retry),
            "reraise": True,
        }

    def _with_retries(self, once: Callable[[], T]) -> T:
        """``once()``; on a retryable error, the tenacity loop (imported and built only then).

        The loop's first attempt re-raises the error already seen, so its wait policy (Retry-After,
        backoff) decides the first pause too; a request that succeeds pays nothing for retrying.
        """
        try:
            return once()
        except ProviderError as error:
            if not self._should_retry(error):
                raise
            seen: ProviderError | None = error
        from tenacity import Retrying

        for attempt in Retrying(**self._retry_options()):
            with attempt:
                if seen is not None:
                    replayed, seen = seen, None
                    raise replayed
                return once()
        raise AssertionError("unreachable")  # pragma: no cover

    async def _awith_retries(self, once: Callable[[], Awaitable[T]]) -> T:
        try:
            return await once()
        except ProviderError as error:
            if not self._should_retry(error):
                raise
            seen: ProviderError | None = error
        from tenacity import AsyncRetrying

        async for attempt in AsyncRetrying(**self._retry_options()):
            with attempt:
                if seen is not None:
                    replayed, seen = seen, None
                    raise replayed
                return await once()
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ requests

    def _build(
        self,
        client: httpx2.Client | httpx2.AsyncClient,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
    ) -> httpx2.Request:
        request_headers = self._request_headers()
        if headers:
            request_headers = httpx2.Headers(request_headers)
            request_headers.update(headers)
        return client.build_request(
            "POST", self._url(path), content=pydantic_core.to_json(body), headers=request_headers
        )

    def _check(self, response: httpx2.Response, body: bytes) -> None:
        if response.status_code >= 400:
            raise error_from_response(self.provider, response.status_code, response.headers, body, self._error_details)

    def post_json(self, path: str, body: Any, headers: Mapping[str, str] | None = None) -> tuple[Any, httpx2.Headers]:
        """POST ``body`` as JSON, return the parsed JSON reply and its headers; retried."""

        def once() -> tuple[Any, httpx2.Headers]:
            client = self.client()
            try:
                response = client.send(self._build(client, path, body, headers))
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            self._check(response, response.content)
            return parse_json(response.content, provider=self.provider), response.headers

        return self._with_retries(once)

    async def apost_json(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None
    ) -> tuple[Any, httpx2.Headers]:
        async def once() -> tuple[Any, httpx2.Headers]:
            client = self.async_client()
            try:
                response = await client.send(self._build(client, path, body, headers))
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            self._check(response, response.content)
            return parse_json(response.content, provider=self.provider), response.headers

        return await self._awith_retries(once)

    @contextmanager
    def stream(self, path: str, body: Any, headers: Mapping[str, str] | None = None) -> Iterator[httpx2.Response]:
        """Open a streaming POST (retried until the status is known good), yield the response.

        Errors while reading the body are mapped but never retried: part of it may have been
        delivered already.
        """

        def once() -> httpx2.Response:
            client = self.client()
            try:
                response = client.send(self._build(client, path, body, headers), stream=True)
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            if response.status_code >= 400:
                content = response.read()
                response.close()
                self._check(response, content)
            return response

        response = self._with_retries(once)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise transport_error(self.provider, exc) from exc
        finally:
            response.close()

    @asynccontextmanager
    async def astream(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[httpx2.Response]:
        async def once() -> httpx2.Response:
            client = self.async_client()
            try:
                response = await client.send(self._build(client, path, body, headers), stream=True)
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            if response.status_code >= 400:
                content = await response.aread()
                await response.aclose()
                self._check(response, content)
            return response

        response = await self._awith_retries(once)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise transport_error(self.provider, exc) from exc
        finally:
            await response.aclose()
