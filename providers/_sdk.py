"""An official SDK client (``openai.OpenAI``/``AsyncOpenAI``, ``anthropic.Anthropic``/``AsyncAnthropic``)
as a provider's transport: its auth, base URL, proxies and headers apply; our request bodies, our
parsing, our error tree and our deadlines stay the same.

Requests go through the SDK's generic ``post(path, body=..., cast_to=httpx2.Response)``, which
returns the raw response (streamed when asked), so :class:`SdkTransport` is a
:class:`~providers._transport.ProviderHttp` that sends each attempt differently and shares the rest.

Retries: without a deadline the SDK retries by its own rules (``max_retries`` on its client) and we
do not retry on top. With a deadline (a request's ``timeout``, ``RetryPolicy.deadline``, or the SDK
client's own ``timeout`` when it is a number, read as a model's numeric ``timeout=`` is) the SDK is
asked for one attempt at a time (``max_retries=0``, each attempt's timeouts cut to the time left)
and the shell's retry loop runs them, as many as the client's ``max_retries``: the SDK alone cannot
bound a request across its retries, and the caller's limit must hold whatever the transport.

The SDK is never imported here: its exception classes are found from the module of the error.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx2

from chatclient.errors import APIConnectionError, APITimeoutError, ProviderError

from ._bridge import watch_response
from ._deadline import Deadline, cut_off
from ._errors import ErrorDetails, error_from_response, transport_error
from ._retry import RetryPolicy
from ._transport import ProviderHttp

T = TypeVar("T")

__all__ = ["SdkTransport", "is_async_client", "map_sdk_error"]


def is_async_client(client: Any) -> bool:
    """True for an async SDK client (``AsyncOpenAI``, ``AsyncAnthropic``): its ``post`` is a coroutine."""
    return inspect.iscoroutinefunction(getattr(client, "post", None))


def _sdk_of(exc: BaseException) -> Any:
    """The SDK package an exception comes from (``openai``, ``anthropic``), if it is loaded."""
    return sys.modules.get(type(exc).__module__.partition(".")[0])


def map_sdk_error(
    provider: str, exc: BaseException, error_details: Callable[[Any], ErrorDetails | None]
) -> ProviderError | None:
    """Our error for an exception of the SDK or of httpx2, ``None`` for anything else.

    A status error goes through the same table as our own HTTP path (:func:`error_from_response`).
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, httpx2.HTTPError):
        return transport_error(provider, exc)
    sdk = _sdk_of(exc)
    status_error = getattr(sdk, "APIStatusError", None)
    if status_error is None:
        return None
    if isinstance(exc, status_error):
        response = exc.response
        try:
            body = response.content
        except httpx2.ResponseNotRead:
            body = b""
        return error_from_response(provider, response.status_code, response.headers, body, error_details)
    if isinstance(exc, sdk.APITimeoutError):
        return APITimeoutError("The request timed out", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__
        detail = f": {type(cause).__name__}" if cause is not None else ""
        return APIConnectionError(f"Connection failed{detail}", provider=provider)
    if isinstance(exc, sdk.APIError):
        return ProviderError(f"{type(exc).__name__}: {exc}", provider=provider)
    return None


def _timeout_of(client: Any) -> httpx2.Timeout:
    """The SDK client's per-attempt timeout as an ``httpx2.Timeout`` (the deadline cuts it)."""
    timeout = getattr(client, "timeout", None)
    if isinstance(timeout, httpx2.Timeout):
        return timeout
    return httpx2.Timeout(timeout if isinstance(timeout, (int, float)) else None)


def _own_timeout(client: Any) -> float | httpx2.Timeout:
    """The SDK client's timeout as the model's would be read: a number (``OpenAI(timeout=2)``) is also
    the request's deadline; a ``Timeout`` object (the SDKs' default) limits each attempt only."""
    timeout = getattr(client, "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    return _timeout_of(client)


class SdkTransport(ProviderHttp):
    """Sends a provider's requests through a sync and/or an async official SDK client."""

    def __init__(
        self,
        *,
        provider: str,
        error_details: Callable[[Any], ErrorDetails | None],
        client: Any,
        async_client: Any,
        retry: RetryPolicy | None,
    ) -> None:
        given = client if client is not None else async_client
        policy = retry or RetryPolicy()
        retries = getattr(given, "max_retries", policy.max_retries)
        policy = policy._replace(max_retries=retries if isinstance(retries, int) else policy.max_retries)
        super().__init__(
            provider=provider,
            base_url=str(given.base_url),
            headers={},
            error_details=error_details,
            retry=policy,
            timeout=_own_timeout(given),
        )
        self.sdk = client
        self.async_sdk = async_client
        self._sdk_timeout = _timeout_of(given)

    def __repr__(self) -> str:
        kind = type(self.sdk if self.sdk is not None else self.async_sdk).__name__
        return f"SdkTransport(provider={self.provider!r}, client={kind})"

    def _retries(self, error: ProviderError, deadline: Deadline | None) -> bool:
        if deadline is None:
            return False  # the SDK has retried already, by its own rules
        return super()._retries(error, deadline)

    def _options(self, headers: Mapping[str, str] | None, deadline: Deadline | None) -> dict[str, Any]:
        """The SDK's per-request options: our headers on top of its own; one bounded attempt under a deadline."""
        options: dict[str, Any] = {"headers": dict(headers)} if headers else {}
        if deadline is not None:
            if deadline.left() <= 0:
                raise deadline.exceeded(self.provider, "no time was left for another attempt")
            options["timeout"] = httpx2.Timeout(**deadline.attempt_timeouts(self._sdk_timeout))
            options["max_retries"] = 0
        return options

    def _error(self, exc: Exception) -> Exception:
        mapped = map_sdk_error(self.provider, exc, self._error_details)
        return exc if mapped is None else mapped

    def _send(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """Under a deadline a whole reply is asked for as a stream and read here, through the same
        deadline-checked body as ours (the SDK's own read is bounded only per read)."""
        options = self._options(headers, deadline)
        read_here = deadline is not None and not stream
        try:
            response: httpx2.Response = self.sdk.post(
                path, cast_to=httpx2.Response, body=body, stream=stream or read_here, options=options
            )
            if read_here:
                assert deadline is not None
                self._read_body(response, deadline)
            elif not stream:
                response.read()
        except Exception as exc:
            error = self._error(exc)
            if error is exc:
                raise
            raise error from exc
        if stream:
            watch_response(response)  # so a bridged ``astream()`` can abort it when cancelled
        return response

    async def _asend(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """Under a deadline the SDK's exchange is cancelled when it passes (``_http.cut_off``)."""
        options = self._options(headers, deadline)
        if deadline is None:
            return await self._apost(path, body, options, stream=stream)
        return await cut_off(deadline, self.provider, self._apost(path, body, options, stream=stream))

    async def _apost(self, path: str, body: Any, options: dict[str, Any], *, stream: bool) -> httpx2.Response:
        try:
            response: httpx2.Response = await self.async_sdk.post(
                path, cast_to=httpx2.Response, body=body, stream=stream, options=options
            )
            if not stream:
                await response.aread()
        except Exception as exc:
            error = self._error(exc)
            if error is exc:
                raise
            raise error from exc
        return response

    def close(self) -> None:
        """The SDK clients are the application's: nothing of ours to close."""

    async def aclose(self) -> None:
        """The SDK clients are the application's: nothing of ours to close."""
