"""``AnthropicChatModel``: the Messages API (``POST /v1/messages``) over httpx2 or the official SDK."""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2

from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    ConfigurationError,
    MalformedResponseError,
    ProviderError,
)
from chatclient.events import ModelEvent
from chatclient.model import ChatModel
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from providers._bridge import iterate_in_thread, watch_response
from providers._extras import extra_headers
from providers._http import ModelLifecycle, ProviderHttp, RetryPolicy, Secret, error_from_response, parse_json
from providers._stream import aiter_sse, iter_sse

from ._mapping import PROVIDER, StreamParser, build_request, error_details, parse_response
from .options import AnthropicChatOptions

__all__ = ["DEFAULT_ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicChatModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_ANTHROPIC_VERSION = "2023-06-01"
MESSAGES_PATH = "/v1/messages"


class AnthropicChatModel(ModelLifecycle, ChatModel):
    """Claude through the Messages API.

    The API key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (read here, once) and the base URL from
    ``base_url``, ``ANTHROPIC_BASE_URL`` or ``https://api.anthropic.com``. Pass ``http_client`` /
    ``async_http_client`` to share httpx2 clients, or ``client=`` an ``anthropic.Anthropic`` /
    ``AsyncAnthropic`` to send the same requests through the official SDK (its auth, proxies, headers
    and retries then apply; ``api_key``, ``base_url``, ``timeout`` and ``retry`` are not used).
    """

    supports_output_schema = True

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: AnthropicChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if key is None and client is None:
            raise ConfigurationError("No Anthropic API key: pass api_key= or set ANTHROPIC_API_KEY")
        self._secret = Secret(key or "")
        self._base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        defaults = options if options is not None else AnthropicChatOptions()
        if model is not None:
            defaults = defaults.model_copy(update={"model": model})  # the argument wins
        self._defaults = defaults
        self._sdk = client
        self._sdk_is_async = client is not None and inspect.iscoroutinefunction(getattr(client, "post", None))
        self._default_headers = _header_key(defaults)
        self._http = ProviderHttp(
            provider=PROVIDER,
            base_url=self._base_url,
            headers=_version_headers(self._default_headers),
            secret_headers={"x-api-key": self._secret},
            error_details=error_details,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        via = f", client={type(self._sdk).__name__}" if self._sdk is not None else ""
        return f"AnthropicChatModel(model={self._defaults.model!r}, base_url={self._base_url!r}{via})"

    @property
    def default_options(self) -> AnthropicChatOptions:
        return self._defaults

    # ------------------------------------------------------------------ plumbing

    def _prepare(self, prompt: Prompt, *, stream: bool) -> tuple[dict[str, Any], ChatOptions, dict[str, str] | None]:
        """The body, the options, and the version/beta headers when this request's differ from the model's."""
        options = self.options_for(prompt)
        body = build_request(prompt, options, stream=stream)
        key = _header_key(options)
        headers = None if key == self._default_headers else _version_headers(key)
        extra = extra_headers(options)
        if extra:
            headers = {**(headers or {}), **extra}
        return body, options, headers

    # ------------------------------------------------------------------ ChatModel

    def call(self, prompt: Prompt) -> ChatResponse:
        body, options, extra = self._prepare(prompt, stream=False)
        if self._sdk is not None:
            data, headers = self._sdk_post(body, options)
        else:
            data, headers = self._http.post_json(MESSAGES_PATH, body, extra, timeout=options.timeout)
        return parse_response(data, headers)

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        body, options, extra = self._prepare(prompt, stream=True)
        if self._sdk is not None:
            yield from self._sdk_stream(body, options)
            return
        with self._http.stream(MESSAGES_PATH, body, extra, timeout=options.timeout) as response:
            parser = StreamParser(response.headers.get("request-id"))
            for event in iter_sse(response, provider=PROVIDER):
                yield from parser.feed(event)
            parser.finish()

    async def acall(self, prompt: Prompt) -> ChatResponse:
        body, options, extra = self._prepare(prompt, stream=False)
        if self._sdk is not None:
            if self._sdk_is_async:
                data, headers = await self._asdk_post(body, options)
            else:
                import asyncio

                data, headers = await asyncio.to_thread(self._sdk_post, body, options)
        else:
            data, headers = await self._http.apost_json(MESSAGES_PATH, body, extra, timeout=options.timeout)
        return parse_response(data, headers)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        body, options, extra = self._prepare(prompt, stream=True)
        if self._sdk is not None:
            events = (
                self._asdk_stream(body, options)
                if self._sdk_is_async
                else iterate_in_thread(lambda: self._sdk_stream(body, options))
            )
            async for model_event in events:
                yield model_event
            return
        async with self._http.astream(MESSAGES_PATH, body, extra, timeout=options.timeout) as response:
            parser = StreamParser(response.headers.get("request-id"))
            async for event in aiter_sse(response, provider=PROVIDER):
                for model_event in parser.feed(event):
                    yield model_event
            parser.finish()

    # ------------------------------------------------------------------ official SDK transport

    def _sync_sdk(self) -> Any:
        if self._sdk_is_async:
            raise ConfigurationError(
                "AnthropicChatModel was given an async SDK client (AsyncAnthropic): use acall/astream, "
                "or pass an anthropic.Anthropic client for call/stream"
            )
        return self._sdk

    def _sdk_kwargs(self, options: ChatOptions) -> dict[str, Any]:
        return {"options": {"headers": {**_override_headers(options), **(extra_headers(options) or {})}}}

    def _sdk_post(self, body: dict[str, Any], options: ChatOptions) -> tuple[Any, httpx2.Headers]:
        client = self._sync_sdk()
        try:
            response = client.post(MESSAGES_PATH, cast_to=httpx2.Response, body=body, **self._sdk_kwargs(options))
        except Exception as exc:
            mapped = _sdk_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return parse_json(response.content, provider=PROVIDER), response.headers

    async def _asdk_post(self, body: dict[str, Any], options: ChatOptions) -> tuple[Any, httpx2.Headers]:
        try:
            response = await self._sdk.post(
                MESSAGES_PATH, cast_to=httpx2.Response, body=body, **self._sdk_kwargs(options)
            )
        except Exception as exc:
            mapped = _sdk_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        return parse_json(response.content, provider=PROVIDER), response.headers

    def _sdk_stream(self, body: dict[str, Any], options: ChatOptions) -> Iterator[ModelEvent]:
        client = self._sync_sdk()
        try:
            response = client.post(
                MESSAGES_PATH, cast_to=httpx2.Response, body=body, stream=True, **self._sdk_kwargs(options)
            )
        except Exception as exc:
            mapped = _sdk_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        watch_response(response)
        try:
            parser = StreamParser(response.headers.get("request-id"))
            for event in iter_sse(response, provider=PROVIDER):
                yield from parser.feed(event)
            parser.finish()
        except httpx2.HTTPError as exc:
            raise _transport_error(exc) from exc
        finally:
            response.close()

    async def _asdk_stream(self, body: dict[str, Any], options: ChatOptions) -> AsyncIterator[ModelEvent]:
        try:
            response = await self._sdk.post(
                MESSAGES_PATH, cast_to=httpx2.Response, body=body, stream=True, **self._sdk_kwargs(options)
            )
        except Exception as exc:
            mapped = _sdk_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        try:
            parser = StreamParser(response.headers.get("request-id"))
            async for event in aiter_sse(response, provider=PROVIDER):
                for model_event in parser.feed(event):
                    yield model_event
            parser.finish()
        except httpx2.HTTPError as exc:
            raise _transport_error(exc) from exc
        finally:
            await response.aclose()


def _header_key(options: ChatOptions) -> tuple[str, tuple[str, ...]]:
    if isinstance(options, AnthropicChatOptions):
        return options.anthropic_version or DEFAULT_ANTHROPIC_VERSION, options.anthropic_beta or ()
    return DEFAULT_ANTHROPIC_VERSION, ()


def _override_headers(options: ChatOptions) -> dict[str, str]:
    """Headers sent through the SDK on top of its own. The API version is pinned to ours: recent SDKs
    default to a newer ``anthropic-version``, and this mapping speaks the one it was written for."""
    version, betas = _header_key(options)
    headers = {"anthropic-version": version}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return headers


def _transport_error(exc: httpx2.HTTPError) -> ProviderError:
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=PROVIDER)
    return APIConnectionError(f"Connection failed: {type(exc).__name__}: {exc}", provider=PROVIDER)


def _sdk_error(exc: Exception) -> ProviderError | None:
    """The SDK's exception in our tree; ``None`` for an exception that is not the SDK's."""
    import anthropic  # only reached when an SDK client was given

    if isinstance(exc, anthropic.APIStatusError):
        response = exc.response
        return error_from_response(PROVIDER, response.status_code, response.headers, response.content, error_details)
    if isinstance(exc, anthropic.APITimeoutError):
        return APITimeoutError("The request timed out", provider=PROVIDER)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        detail = f": {type(cause).__name__}" if cause is not None else ""
        return APIConnectionError(f"Connection failed{detail}", provider=PROVIDER)
    if isinstance(exc, anthropic.AnthropicError):
        return MalformedResponseError(f"The Anthropic SDK failed: {exc}", provider=PROVIDER)
    return None


def _version_headers(key: tuple[str, tuple[str, ...]]) -> dict[str, str]:
    version, betas = key
    headers = {"anthropic-version": version}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return headers
