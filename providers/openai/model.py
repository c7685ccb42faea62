"""``OpenAIChatModel``: OpenAI Chat Completions, and every server that speaks it.

``base_url`` points it at any OpenAI-compatible server: Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio, Groq, DeepSeek, Azure OpenAI's ``/openai/v1`` endpoint. Without an API key no
``Authorization`` header is sent, which is what local servers expect.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import httpx2

from chatclient.errors import ConfigurationError
from chatclient.events import ModelEvent
from chatclient.model import ChatModel
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse
from providers._bridge import iterate_in_thread
from providers._extras import extra_headers
from providers._http import ModelLifecycle, ProviderHttp, RetryPolicy, Secret, parse_json
from providers._stream import aiter_sse, iter_sse

from ._mapping import PROVIDER, StreamParser, build_request, error_details, parse_response
from .options import OpenAIChatOptions

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MODEL", "OpenAIChatModel"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
PATH = "/chat/completions"

_CREDENTIAL_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_openai_platform(url: str) -> bool:
    """OpenAI itself or Azure OpenAI: the servers that want ``max_completion_tokens``."""
    host = _host(url)
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def _brings_credentials(*clients: httpx2.Client | httpx2.AsyncClient | None) -> bool:
    """Whether an injected httpx2 client authenticates by itself (an ``auth`` flow, a key header)."""
    return any(
        c is not None and (c.auth is not None or "authorization" in c.headers or "api-key" in c.headers)
        for c in clients
    )


class OpenAIChatModel(ModelLifecycle, ChatModel):
    """Chat Completions over httpx2 (or over an official ``openai`` client, see ``client``).

    The API key comes from ``api_key`` or ``OPENAI_API_KEY``, read once here and held in a
    ``Secret``. ``OPENAI_API_KEY`` is used only for the server it belongs to: OpenAI, or the
    ``OPENAI_BASE_URL`` set beside it; an explicit ``base_url`` to another server gets no key unless
    ``api_key`` is given, so a local server never receives your OpenAI key.

    ``headers`` are sent with every request; credential headers among them (``api-key`` for Azure,
    ``authorization``) are held as secrets too. ``client``/``async_client`` take an
    ``openai.OpenAI``/``openai.AsyncOpenAI`` (or ``AzureOpenAI``): requests then go through the SDK,
    with its auth and its own retries (``retry`` does not apply)::

        OpenAIChatModel("gpt-4o-mini")                                  # OPENAI_API_KEY
        OpenAIChatModel("qwen3", base_url="http://localhost:11434/v1")  # Ollama: no key, no header
        OpenAIChatModel("gpt-4o", base_url="https://res.openai.azure.com/openai/v1", headers={"api-key": key})
        OpenAIChatModel("gpt-4o", client=openai.AzureOpenAI(api_version=..., azure_deployment=...))
    """

    supports_output_schema = True

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        options: OpenAIChatOptions | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        async_client: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        options = options or OpenAIChatOptions()
        name = model or options.model or DEFAULT_MODEL
        self._defaults = options if options.model == name else options.model_copy(update={"model": name})
        env_base = os.environ.get("OPENAI_BASE_URL")
        self.base_url = (base_url or env_base or DEFAULT_BASE_URL).rstrip("/")
        if api_key is None and (base_url is None or _host(base_url) == "api.openai.com"):
            api_key = os.environ.get("OPENAI_API_KEY")
        plain: dict[str, str] = {"accept": "application/json"}
        secret: dict[str, Secret] = {}
        if api_key:
            secret["authorization"] = Secret(f"Bearer {api_key}")
        for key, value in (headers or {}).items():
            if key.lower() in _CREDENTIAL_HEADERS:
                secret[key.lower()] = Secret(value)
            else:
                plain[key] = value
        if (
            api_key is None
            and not secret
            and client is None
            and async_client is None
            and _host(self.base_url) == "api.openai.com"
            and not _brings_credentials(http_client, async_http_client)
        ):
            # Found now rather than as a 401 on the first request, as Anthropic and Responses do.
            # Only for OpenAI's own host: other servers may need no key, and ``api_key=""`` is a
            # deliberate "send none" (a gateway that adds the credential itself).
            raise ConfigurationError(
                f"No OpenAI API key for {self.base_url}: pass api_key= or set OPENAI_API_KEY "
                "(for a server of your own, pass its base_url=)"
            )
        self._http = ProviderHttp(
            provider=PROVIDER,
            base_url=self.base_url,
            headers=plain,
            secret_headers=secret,
            error_details=error_details,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            retry=retry,
        )
        self._sdk = None
        if client is not None or async_client is not None:
            from ._sdk import SdkTransport, is_async_client

            if client is not None and async_client is None and is_async_client(client):
                client, async_client = None, client
            self._sdk = SdkTransport(client, async_client)
            self.base_url = self._sdk.base_url.rstrip("/")
        self._openai_platform = _is_openai_platform(self.base_url)

    def __repr__(self) -> str:
        via = ", via=openai-sdk" if self._sdk is not None else ""
        return f"OpenAIChatModel(model={self._defaults.model!r}, base_url={self.base_url!r}{via})"

    @property
    def default_options(self) -> OpenAIChatOptions:
        return self._defaults

    # ------------------------------------------------------------------ request

    def _body(self, prompt: Prompt, *, stream: bool) -> tuple[dict[str, Any], dict[str, str] | None]:
        """The request body and the options' extra headers."""
        options = self.options_for(prompt)
        body = build_request(prompt, options, stream=stream, openai_platform=self._openai_platform)
        return body, extra_headers(options)

    def _open(
        self, body: dict[str, Any], headers: dict[str, str] | None, timeout: float | None
    ) -> AbstractContextManager[httpx2.Response]:
        if self._sdk is not None:
            return self._sdk.stream(body, headers)
        return self._http.stream(PATH, body, headers, timeout=timeout)

    def _aopen(
        self, body: dict[str, Any], headers: dict[str, str] | None, timeout: float | None
    ) -> AbstractAsyncContextManager[httpx2.Response]:
        if self._sdk is not None:
            return self._sdk.astream(body, headers)
        return self._http.astream(PATH, body, headers, timeout=timeout)

    # ------------------------------------------------------------------ sync

    def call(self, prompt: Prompt) -> ChatResponse:
        body, extra = self._body(prompt, stream=False)
        if self._sdk is None:
            data, headers = self._http.post_json(PATH, body, extra, timeout=self.options_for(prompt).timeout)
        elif self._sdk.client is not None:
            data, headers = self._sdk.post_json(body, extra)
        else:
            return self._via_async_sdk(prompt)
        return parse_response(data, headers)

    def stream(self, prompt: Prompt) -> Generator[ModelEvent, None, None]:
        if self._sdk is not None and self._sdk.client is None:
            yield from self._via_async_sdk_stream(prompt)
            return
        body, extra = self._body(prompt, stream=True)
        with self._open(body, extra, self.options_for(prompt).timeout) as response:
            if not _is_event_stream(response):
                # A server that ignored ``stream: true`` and answered in one piece.
                yield parse_response(parse_json(response.read(), provider=PROVIDER), response.headers)
                return
            parser = StreamParser(response.headers)
            events = iter_sse(response, provider=PROVIDER)
            for _, data in events:
                yield from parser.feed(data)
            parser.finish(events.saw_done)

    # ------------------------------------------------------------------ async

    async def acall(self, prompt: Prompt) -> ChatResponse:
        body, extra = self._body(prompt, stream=False)
        if self._sdk is None:
            data, headers = await self._http.apost_json(PATH, body, extra, timeout=self.options_for(prompt).timeout)
        elif self._sdk.async_client is not None:
            data, headers = await self._sdk.apost_json(body, extra)
        else:
            import asyncio

            return await asyncio.to_thread(self.call, prompt)
        return parse_response(data, headers)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        if self._sdk is not None and self._sdk.async_client is None:
            # Only a sync SDK client: its stream is read in a worker thread, event by event.
            async for event in iterate_in_thread(lambda: self.stream(prompt)):
                yield event
            return
        body, extra = self._body(prompt, stream=True)
        async with self._aopen(body, extra, self.options_for(prompt).timeout) as response:
            if not _is_event_stream(response):
                yield parse_response(parse_json(await response.aread(), provider=PROVIDER), response.headers)
                return
            parser = StreamParser(response.headers)
            events = aiter_sse(response, provider=PROVIDER)
            async for _, data in events:
                for event in parser.feed(data):
                    yield event
            parser.finish(events.saw_done)

    # ------------------------------------------------------------------ async-only SDK client

    def _via_async_sdk(self, prompt: Prompt) -> ChatResponse:
        from chatclient._sync import run_sync

        return run_sync(lambda: self.acall(prompt))

    def _via_async_sdk_stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        from chatclient._sync import iterate_sync

        return iterate_sync(lambda: self.astream(prompt))


def _is_event_stream(response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "")
    return not content_type.startswith("application/json")
