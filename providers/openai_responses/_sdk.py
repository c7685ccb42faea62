"""The official ``openai`` SDK as an alternative transport (Azure, proxies, custom auth).

The request body is ours and the reply is parsed by our mapping; the SDK only sends it through its
raw request API (``client.post(..., cast_to=httpx2.Response)``), so its auth, base URL, headers and
retries apply. ``openai`` is imported only when an SDK error has to be mapped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2

from chatclient.errors import APIConnectionError, APITimeoutError, ProviderError
from providers._bridge import watch_response
from providers._http import error_from_response, parse_json

from ._mapping import PROVIDER, error_details

__all__ = ["is_async_client", "map_sdk_error", "sdk_apost", "sdk_astream", "sdk_post", "sdk_stream"]

_PATH = "/responses"


def is_async_client(client: Any) -> bool:
    """True for ``openai.AsyncOpenAI`` (and ``AsyncAzureOpenAI``): its ``post`` is a coroutine."""
    import inspect

    return inspect.iscoroutinefunction(getattr(client, "post", None))


def map_sdk_error(exc: Exception) -> ProviderError | None:
    """Our error for an exception of the SDK or of httpx2, ``None`` for anything else."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, httpx2.HTTPError):
        return _transport_error(exc)
    try:
        import openai
    except ImportError:  # pragma: no cover - a client was given, so the SDK is there
        return None
    if isinstance(exc, openai.APIStatusError):
        response = exc.response
        try:
            body = response.content
        except httpx2.ResponseNotRead:
            body = b""
        return error_from_response(PROVIDER, response.status_code, response.headers, body, error_details)
    if isinstance(exc, openai.APITimeoutError):
        return APITimeoutError("The request timed out", provider=PROVIDER)
    if isinstance(exc, openai.APIConnectionError):
        return APIConnectionError(f"Connection failed: {exc.message}", provider=PROVIDER)
    if isinstance(exc, openai.APIError):
        return ProviderError(exc.message, provider=PROVIDER)
    return None


def _transport_error(exc: httpx2.HTTPError) -> ProviderError:
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=PROVIDER)
    return APIConnectionError(f"Connection failed: {type(exc).__name__}: {exc}", provider=PROVIDER)


def _options(headers: dict[str, str] | None) -> dict[str, Any]:
    """The SDK's per-request options: our extra headers on top of the client's own."""
    return {"headers": headers} if headers else {}


def sdk_post(client: Any, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[Any, httpx2.Headers]:
    try:
        response: httpx2.Response = client.post(_PATH, body=body, cast_to=httpx2.Response, options=_options(headers))
    except Exception as exc:
        mapped = map_sdk_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    return parse_json(response.content, provider=PROVIDER), response.headers


async def sdk_apost(
    client: Any, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[Any, httpx2.Headers]:
    try:
        response: httpx2.Response = await client.post(
            _PATH, body=body, cast_to=httpx2.Response, options=_options(headers)
        )
    except Exception as exc:
        mapped = map_sdk_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    return parse_json(response.content, provider=PROVIDER), response.headers


@contextmanager
def sdk_stream(client: Any, body: dict[str, Any], headers: dict[str, str] | None = None) -> Iterator[httpx2.Response]:
    """The open streamed response, closed on exit; errors mapped while opening and while reading."""
    try:
        response: httpx2.Response = client.post(
            _PATH, body=body, cast_to=httpx2.Response, stream=True, options=_options(headers)
        )
    except Exception as exc:
        mapped = map_sdk_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    watch_response(response)
    try:
        yield response
    except httpx2.HTTPError as exc:
        raise _transport_error(exc) from exc
    finally:
        response.close()


@asynccontextmanager
async def sdk_astream(
    client: Any, body: dict[str, Any], headers: dict[str, str] | None = None
) -> AsyncIterator[httpx2.Response]:
    try:
        response: httpx2.Response = await client.post(
            _PATH, body=body, cast_to=httpx2.Response, stream=True, options=_options(headers)
        )
    except Exception as exc:
        mapped = map_sdk_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    try:
        yield response
    except httpx2.HTTPError as exc:
        raise _transport_error(exc) from exc
    finally:
        await response.aclose()
