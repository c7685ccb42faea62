"""The provider shell: everything a provider does that is not its wire mapping, written once.

A provider is a :class:`WireMapping` (its name, its path, and the pure functions that build a
request body and read a reply, a stream and an error body) plus, in :class:`ProviderModel`'s
constructor, how it finds its key and base URL. The shell gives it the rest:

- the transport: httpx2 (:class:`~providers._transport.ProviderHttp`) or the user's official SDK client
  (:class:`~providers._sdk.SdkTransport`), the four modes over either, and a sync-only or async-only
  SDK client serving the other side (a worker thread, or the sync bridge);
- lifecycle (``close``, ``aclose``, ``with``, ``async with``), retries, deadlines (a request's
  ``timeout`` and ``RetryPolicy.deadline``, over httpx2 and over an SDK client), error classification,
  key redaction (all in ``ProviderHttp``);
- options: the request's over the model's (``extra_body`` deep-merged into the body last,
  ``extra_headers`` sent on top of the provider's own);
- streams: SSE or NDJSON framing fed to the mapping's decoder, which says when a stream ended
  before its terminal event (``StreamIncompleteError``).

A plugin author writes the mapping and a five-line model class; ``tests/providers/plugin_provider.py``
is one, checked by the conformance kit like the built-in four.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, Protocol, TypeVar

import httpx2

from chatclient.errors import ConfigurationError
from chatclient.model import ChatModel
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse

from ._errors import ErrorDetails, parse_json
from ._extras import apply_extra_body, extra_headers
from ._retry import RetryPolicy
from ._secrets import Secret
from ._stream import SseStream, aiter_ndjson, aiter_sse, iter_ndjson, iter_sse
from ._transport import ModelLifecycle, ProviderHttp

if TYPE_CHECKING:
    from chatclient.events import ModelEvent

__all__ = ["BuildRequest", "ParseResponse", "ProviderModel", "StreamDecoder", "WireMapping", "require_credentials"]

OptionsT = TypeVar("OptionsT", bound=ChatOptions)


class BuildRequest(Protocol):
    def __call__(self, prompt: Prompt, options: ChatOptions, *, stream: bool) -> dict[str, Any]: ...


class ParseResponse(Protocol):
    def __call__(self, data: Any, headers: httpx2.Headers) -> ChatResponse: ...


class StreamDecoder(Protocol):
    """Turns one streamed reply's events into model events, keeping state across them."""

    def feed(self, event: Any) -> Iterable[ModelEvent]:
        """One event: ``(name, data)`` for SSE, the parsed line for NDJSON."""
        ...

    def finish(self, saw_done: bool = False) -> None:
        """The stream ended (``saw_done``: an SSE ``[DONE]`` came); raise ``StreamIncompleteError``
        if it ended before the API's terminal event."""
        ...


class WireMapping(NamedTuple):
    """A wire API, declared: what a provider supplies; the shell does the rest."""

    provider: str
    """The name in errors and logs (``ProviderError.provider``)."""
    path: str
    """Appended to the base URL (``"/chat/completions"``)."""
    build_request: BuildRequest
    """``(prompt, options, stream=)`` → the request body (pure; ``extra_body`` is merged in after)."""
    parse_response: ParseResponse
    """``(json, headers)`` of a complete reply → the response."""
    error_details: Callable[[Any], ErrorDetails | None]
    """What an error body says (message, type, code); the status table does the classing."""
    stream_decoder: Callable[[httpx2.Headers], StreamDecoder]
    """A fresh decoder for one streamed reply, given its response headers."""
    framing: Literal["sse", "ndjson"] = "sse"
    accept: str | None = "application/json"
    """The ``accept`` header sent with every request (``None``: none)."""


def require_credentials(
    base_url: str,
    vendor_hosts: Collection[str],
    clients: Iterable[httpx2.Client | httpx2.AsyncClient | None],
    message: str,
) -> None:
    """A ``ConfigurationError`` when ``base_url`` is one of the vendor's own hosts and no injected
    client authenticates by itself (an ``auth`` flow, a key header): found when the model is built
    rather than as a 401 on the first request, and only for the vendor's host, as other servers (a
    local one, a gateway) may need no key."""
    from urllib.parse import urlsplit  # only when a model for a vendor host is built

    host = (urlsplit(base_url).hostname or "").lower()
    if host not in vendor_hosts:
        return
    for c in clients:
        if c is not None and (
            c.auth is not None or any(h in c.headers for h in ("authorization", "api-key", "x-api-key"))
        ):
            return
    raise ConfigurationError(message or f"No API key for {base_url}")


class ProviderModel(ModelLifecycle, ChatModel, Generic[OptionsT]):
    """A ``ChatModel`` for one :class:`WireMapping`. Subclasses set :attr:`wire` and call
    ``super().__init__`` with what they resolved (key headers, base URL, default options)."""

    wire: WireMapping
    """The provider's declaration (a class attribute; an instance may pick another, e.g. per server)."""
    supports_output_schema = True

    _defaults: OptionsT
    _http: ProviderHttp
    _transport: ProviderHttp
    """``_http``, or the SDK transport when an official client was given."""
    _sdk_sync: Any
    _sdk_async: Any
    _sync_via_async: bool
    """Only an async SDK client was given: sync calls run it through the sync bridge."""
    _async_via_sync: bool
    """Only a sync SDK client was given: async calls run it in a worker thread."""
    _last_options: tuple[ChatOptions | None, ChatOptions, ChatOptions] | None = None
    """(the prompt's options, the defaults, their merge) of the last request (:meth:`options_for`)."""

    def __init__(
        self,
        *,
        defaults: OptionsT,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, Secret] | None = None,
        http_client: httpx2.Client | None = None,
        async_http_client: httpx2.AsyncClient | None = None,
        client: Any = None,
        async_client: Any = None,
        timeout: float | httpx2.Timeout = 600.0,
        retry: RetryPolicy | None = None,
        vendor_hosts: Collection[str] = (),
        missing_key: str = "",
    ) -> None:
        """``vendor_hosts``: the provider's own hosts, where a request without a credential can only
        fail; such a model is refused when built (``ConfigurationError(missing_key)``) unless it has a
        credential header (an explicitly empty one is a deliberate "send none"), an SDK client, or an
        injected httpx2 client that authenticates by itself."""
        wire = self.wire
        self._defaults = defaults
        if vendor_hosts and client is None and async_client is None and not secret_headers:
            require_credentials(base_url, vendor_hosts, (http_client, async_http_client), missing_key)
        self._http = ProviderHttp(
            provider=wire.provider,
            base_url=base_url,
            headers={"accept": wire.accept, **(headers or {})} if wire.accept else dict(headers or {}),
            secret_headers=secret_headers,
            error_details=wire.error_details,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            retry=retry,
        )
        self._transport = self._http
        self._sdk_sync = self._sdk_async = None
        self._sync_via_async = self._async_via_sync = False
        if client is not None or async_client is not None:
            from ._sdk import SdkTransport, is_async_client

            if client is not None and async_client is None and is_async_client(client):
                client, async_client = None, client  # ``client=`` takes either kind
            self._sdk_sync, self._sdk_async = client, async_client
            self._sync_via_async, self._async_via_sync = client is None, async_client is None
            self._transport = SdkTransport(
                provider=wire.provider,
                error_details=wire.error_details,
                client=client,
                async_client=async_client,
                retry=retry,
            )

    @property
    def default_options(self) -> OptionsT:
        return self._defaults

    @property
    def via_sdk(self) -> bool:
        """Whether requests go through an official SDK client."""
        return self._transport is not self._http

    # ------------------------------------------------------------------ what a provider may refine

    def build_body(self, prompt: Prompt, options: ChatOptions, *, stream: bool) -> dict[str, Any]:
        """The request body: the mapping's, with ``extra_body`` merged in last."""
        return apply_extra_body(self.wire.build_request(prompt, options, stream=stream), options)

    def request_headers(self, options: ChatOptions) -> dict[str, str] | None:
        """Headers of this request on top of the model's own (by default the options' ``extra_headers``)."""
        return extra_headers(options)

    def no_sync_sdk_client(self) -> None:
        """Called before a sync call when only an async SDK client was given; by default the call
        runs it through the sync bridge. A provider may refuse instead (raise)."""

    # ------------------------------------------------------------------ plumbing

    def options_for(self, prompt: Prompt) -> ChatOptions:
        """The prompt's options over this model's defaults, merged once per options object: the client
        hands every request of a spec the same (frozen) options, so the merge of the last one is reused."""
        given = prompt.options
        last = self._last_options
        if last is not None and last[0] is given and last[1] is self._defaults:
            return last[2]
        merged = super().options_for(prompt)
        self._last_options = (given, self._defaults, merged)  # one tuple: a thread reads all of it or none
        return merged

    def _request(self, prompt: Prompt, *, stream: bool) -> tuple[dict[str, Any], dict[str, str] | None, float | None]:
        options = self.options_for(prompt)
        return self.build_body(prompt, options, stream=stream), self.request_headers(options), options.timeout

    def _whole_reply(self, response: httpx2.Response) -> bool:
        """A server that ignored ``stream: true`` and answered in one piece (SSE APIs only)."""
        return self.wire.framing == "sse" and response.headers.get("content-type", "").startswith("application/json")

    # ------------------------------------------------------------------ ChatModel

    def call(self, prompt: Prompt) -> ChatResponse:
        if self._sync_via_async:
            self.no_sync_sdk_client()
            from chatclient._sync import run_sync

            return run_sync(lambda: self.acall(prompt))
        body, headers, timeout = self._request(prompt, stream=False)
        data, reply_headers = self._transport.post_json(self.wire.path, body, headers, timeout=timeout)
        return self.wire.parse_response(data, reply_headers)

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        if self._sync_via_async:
            self.no_sync_sdk_client()
            from chatclient._sync import iterate_sync

            yield from iterate_sync(lambda: self.astream(prompt))
            return
        body, headers, timeout = self._request(prompt, stream=True)
        opened: AbstractContextManager[httpx2.Response] = self._transport.stream(
            self.wire.path, body, headers, timeout=timeout
        )
        wire = self.wire
        with opened as response:
            if self._whole_reply(response):
                yield wire.parse_response(parse_json(response.read(), provider=wire.provider), response.headers)
                return
            decoder = wire.stream_decoder(response.headers)
            events = iter_sse if wire.framing == "sse" else iter_ndjson
            source = events(response, provider=wire.provider)
            for item in source:
                yield from decoder.feed(item)
            decoder.finish(isinstance(source, SseStream) and source.saw_done)

    def acall(self, prompt: Prompt) -> Coroutine[Any, Any, ChatResponse]:
        """The transport's coroutine itself (``ProviderHttp.apost_parsed``), not one that awaits it:
        a frame less between the caller and the socket, resumed at every await of the request. The
        request is built here; an error building it is raised when the call is awaited, as before."""
        if self._async_via_sync:
            import asyncio

            return asyncio.to_thread(self.call, prompt)
        try:
            options = self.options_for(prompt)
            body = self.build_body(prompt, options, stream=False)
            headers = self.request_headers(options)
        except Exception as exc:
            return _raising(exc)
        wire = self.wire
        return self._transport.apost_parsed(wire.path, body, headers, wire.parse_response, timeout=options.timeout)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        if self._async_via_sync:
            from ._bridge import iterate_in_thread

            # Only a sync SDK client: its stream is read in a worker thread, event by event.
            async for event in iterate_in_thread(lambda: self.stream(prompt)):
                yield event
            return
        body, headers, timeout = self._request(prompt, stream=True)
        opened: AbstractAsyncContextManager[httpx2.Response] = self._transport.astream(
            self.wire.path, body, headers, timeout=timeout
        )
        wire = self.wire
        async with opened as response:
            if self._whole_reply(response):
                data = parse_json(await response.aread(), provider=wire.provider)
                yield wire.parse_response(data, response.headers)
                return
            decoder = wire.stream_decoder(response.headers)
            events = aiter_sse if wire.framing == "sse" else aiter_ndjson
            source = events(response, provider=wire.provider)
            async for item in source:
                for model_event in decoder.feed(item):
                    yield model_event
            decoder.finish(isinstance(source, SseStream) and source.saw_done)


async def _raising(error: Exception) -> ChatResponse:
    raise error
