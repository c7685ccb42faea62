"""The official ``openai`` SDK as a transport: its auth (Azure, proxies, custom headers) and its
retries apply, our request bodies and our parsing stay the same.

The SDK is imported only when a client is handed to the model (``chatclient[openai]`` extra).
Requests go through the SDK's generic ``post(..., cast_to=httpx2.Response)``, which returns the
raw response (streamed when asked); the SDK's exceptions are mapped into our ``ProviderError``
tree with the same rules as our own HTTP path.
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

__all__ = ["SdkTransport", "is_async_client"]

PATH = "/chat/completions"


def is_async_client(client: Any) -> bool:
    import openai

    return isinstance(client, openai.AsyncOpenAI)


def map_sdk_error(exc: BaseException) -> BaseException:
    """Our error for an SDK exception (others pass through unchanged)."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        response = exc.response
        return error_from_response(PROVIDER, response.status_code, response.headers, response.content, error_details)
    if isinstance(exc, openai.APITimeoutError):
        return APITimeoutError("The request timed out", provider=PROVIDER)
    if isinstance(exc, openai.APIConnectionError):
        return APIConnectionError(f"Connection failed: {exc}", provider=PROVIDER)
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=PROVIDER)
    if isinstance(exc, httpx2.HTTPError):
        return APIConnectionError(f"Connection failed: {type(exc).__name__}: {exc}", provider=PROVIDER)
    if isinstance(exc, openai.OpenAIError):
        return ProviderError(f"{type(exc).__name__}: {exc}", provider=PROVIDER)
    return exc


def _request_options(headers: dict[str, str] | None) -> dict[str, Any]:
    """The SDK's per-request options: our extra headers on top of the client's own."""
    return {"headers": headers} if headers else {}


class SdkTransport:
    """Sends our request bodies through a sync and/or async SDK client."""

    def __init__(self, client: Any, async_client: Any) -> None:
        self.client = client
        self.async_client = async_client

    @property
    def base_url(self) -> str:
        return str((self.client or self.async_client).base_url)

    def post_json(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[Any, httpx2.Headers]:
        try:
            response: httpx2.Response = self.client.post(
                PATH, body=body, cast_to=httpx2.Response, options=_request_options(headers)
            )
            content = response.content
        except Exception as exc:
            raise map_sdk_error(exc) from exc
        return parse_json(content, provider=PROVIDER), response.headers

    async def apost_json(
        self, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[Any, httpx2.Headers]:
        try:
            response: httpx2.Response = await self.async_client.post(
                PATH, body=body, cast_to=httpx2.Response, options=_request_options(headers)
            )
            content = await response.aread()
        except Exception as exc:
            raise map_sdk_error(exc) from exc
        return parse_json(content, provider=PROVIDER), response.headers

    @contextmanager
    def stream(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Iterator[httpx2.Response]:
        try:
            response: httpx2.Response = self.client.post(
                PATH, body=body, cast_to=httpx2.Response, stream=True, options=_request_options(headers)
            )
        except Exception as exc:
            raise map_sdk_error(exc) from exc
        watch_response(response)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise map_sdk_error(exc) from exc
        finally:
            response.close()

    @asynccontextmanager
    async def astream(
        self, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> AsyncIterator[httpx2.Response]:
        try:
            response: httpx2.Response = await self.async_client.post(
                PATH, body=body, cast_to=httpx2.Response, stream=True, options=_request_options(headers)
            )
        except Exception as exc:
            raise map_sdk_error(exc) from exc
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise map_sdk_error(exc) from exc
        finally:
            await response.aclose()
