"""``OpenAIResponsesChatModel``: chatclient on OpenAI's ``POST /v1/responses``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import httpx2

from chatclient.errors import ConfigurationError
from chatclient.events import ModelEvent
from chatclient.model import ChatModel
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from providers._bridge import iterate_in_thread
from providers._extras import extra_headers
from providers._http import ModelLifecycle, ProviderHttp, RetryPolicy, Secret
from providers._stream import aiter_sse, iter_sse

from . import _sdk
from ._mapping import PROVIDER, StreamParser, build_request, error_details, parse_response
from .options import OpenAIResponsesChatOptions

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIResponsesChatModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-5-mini"
_PATH = "/responses"


class OpenAIResponsesChatModel(ModelLifecycle, ChatModel):
    """OpenAI's Responses API, stateless by default (``store: false``): every request carries the
    whole conversation, reasoning items included (as ``encrypted_content``), so any replica and any
    memory advisor can continue it.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``, the base URL from ``base_url``,
    ``OPENAI_BASE_URL`` or :data:`DEFAULT_BASE_URL`, both read here, once. Pass ``client`` (an
    ``openai.OpenAI`` or ``openai.AsyncOpenAI``) to send through the official SDK instead, with its
    own auth, base URL and retries (``api_key``, ``base_url``, ``http_client``, ``retry`` then do
    not apply).
    """

    supports_output_schema = True

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: OpenAIResponsesChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        options = options or OpenAIResponsesChatOptions()
        values = options._set_values()
        values["model"] = model or options.model or DEFAULT_MODEL
        self._options = type(options)(**values)
        self._sdk = client
        self._sdk_async = client is not None and _sdk.is_async_client(client)
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if client is None and not key and self._base_url == DEFAULT_BASE_URL:
            raise ConfigurationError("No OpenAI API key: pass api_key= or set OPENAI_API_KEY")
        self._http = ProviderHttp(
            provider=PROVIDER,
            base_url=self._base_url,
            headers={"accept": "application/json"},
            secret_headers={"authorization": Secret(f"Bearer {key}")} if key else None,
            error_details=error_details,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        transport = "sdk" if self._sdk is not None else self._base_url
        return f"{type(self).__name__}(model={self._options.model!r}, transport={transport!r})"

    @property
    def default_options(self) -> OpenAIResponsesChatOptions:
        return self._options

    def _body(self, prompt: Prompt, *, stream: bool) -> tuple[dict[str, Any], dict[str, str] | None]:
        """The request body and the options' extra headers."""
        options = self.options_for(prompt)
        return build_request(prompt, options, stream=stream), extra_headers(options)

    # ------------------------------------------------------------------ sync

    def call(self, prompt: Prompt) -> ChatResponse:
        if self._sdk is not None:
            if self._sdk_async:
                from chatclient._sync import run_sync

                return run_sync(lambda: self.acall(prompt))
            data, headers = _sdk.sdk_post(self._sdk, *self._body(prompt, stream=False))
        else:
            data, headers = self._http.post_json(
                _PATH, *self._body(prompt, stream=False), timeout=self.options_for(prompt).timeout
            )
        return parse_response(data, headers)

    def stream(self, prompt: Prompt) -> Generator[ModelEvent, None, None]:
        if self._sdk_async:
            from chatclient._sync import iterate_sync

            yield from iterate_sync(lambda: self.astream(prompt))
            return
        body, extra = self._body(prompt, stream=True)
        opened: AbstractContextManager[httpx2.Response] = (
            _sdk.sdk_stream(self._sdk, body, extra)
            if self._sdk is not None
            else self._http.stream(_PATH, body, extra, timeout=self.options_for(prompt).timeout)
        )
        with opened as response:
            parser = StreamParser(response.headers.get("x-request-id"))
            for event in iter_sse(response, provider=PROVIDER):
                yield from parser.feed(event)
            parser.finish()

    # ------------------------------------------------------------------ async

    async def acall(self, prompt: Prompt) -> ChatResponse:
        if self._sdk is not None:
            if not self._sdk_async:
                import asyncio

                return await asyncio.to_thread(self.call, prompt)
            data, headers = await _sdk.sdk_apost(self._sdk, *self._body(prompt, stream=False))
        else:
            data, headers = await self._http.apost_json(
                _PATH, *self._body(prompt, stream=False), timeout=self.options_for(prompt).timeout
            )
        return parse_response(data, headers)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        if self._sdk is not None and not self._sdk_async:
            async for model_event in iterate_in_thread(lambda: self.stream(prompt)):
                yield model_event
            return
        body, extra = self._body(prompt, stream=True)
        opened: AbstractAsyncContextManager[httpx2.Response] = (
            _sdk.sdk_astream(self._sdk, body, extra)
            if self._sdk is not None
            else self._http.astream(_PATH, body, extra, timeout=self.options_for(prompt).timeout)
        )
        async with opened as response:
            parser = StreamParser(response.headers.get("x-request-id"))
            async for event in aiter_sse(response, provider=PROVIDER):
                for model_event in parser.feed(event):
                    yield model_event
            parser.finish()
