"""The provider shell: everything a provider does that is not its wire mapping, written once.

A model is a :class:`~providers._wire.WireMapping` (its name, its path, and the pure functions that
build a request body and read a reply, a stream and an error body) beside a
:class:`~providers._provider.Provider` (the vendor's key, base URL and SDK client, as data). The shell
gives it the rest:

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

A plugin author writes the mapping and a five-line model class (and, for a vendor of its own, a
provider class of a few attributes); ``tests/providers/plugin_provider.py``
is one, checked by the conformance kit like the built-in four.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import httpx2
from typing_extensions import Unpack

from chatclient.model import ChatModel
from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse

from ._errors import parse_json
from ._extras import apply_extra_body, extra_headers
from ._provider import Provider, ProviderArgs
from ._secrets import Secret
from ._stream import SseStream, aiter_ndjson, aiter_sse, fed, iter_ndjson, iter_sse
from ._transport import ModelLifecycle, ProviderHttp
from ._wire import BuildRequest, ParseResponse, StreamDecoder, WireMapping

if TYPE_CHECKING:
    from chatclient.events import ModelEvent

__all__ = ["BuildRequest", "ParseResponse", "ProviderModel", "StreamDecoder", "WireMapping"]

OptionsT = TypeVar("OptionsT", bound=ChatOptions)


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
    provider_class: ClassVar[type[Provider]] = Provider
    """What ``provider=`` defaults to, built from the model's keywords (``api_key=``, ``base_url=``, ...)."""
    provider: Provider
    """Who this model talks to: key, base URL, SDK client; its repr is the model's."""
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
        provider: Provider | None = None,
        model_headers: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, Secret] | None = None,
        **provider_args: Unpack[ProviderArgs],
    ) -> None:
        """``provider``, or the settings to build one of :attr:`provider_class` from (a plugin may pass
        ``base_url=``, ``secret_headers=`` and the transport's keywords). ``model_headers``: sent with
        every request of this model under the provider's own (a wire's version header)."""
        if provider is None:
            if secret_headers:
                provider_args["headers"] = {**(provider_args.get("headers") or {}), **secret_headers}
            provider = self.provider_class(**provider_args)
        elif provider_args or secret_headers:
            given = ", ".join([*provider_args, *(["secret_headers"] if secret_headers else [])])
            raise TypeError(f"{type(self).__name__}: pass provider= or its settings ({given}), not both")
        self.provider = provider
        self._defaults = defaults
        self._http, self._transport = provider.open(self.wire, model_headers)
        self._sdk_sync, self._sdk_async = provider.sdk_client, provider.async_sdk_client
        self._sync_via_async = self.via_sdk and provider.sdk_client is None
        self._async_via_sync = self.via_sdk and provider.async_sdk_client is None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._defaults.model!r}, {self.provider.describe()})"

    @property
    def base_url(self) -> str:
        """Where this model's requests go (the provider's)."""
        return self.provider.base_url

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

    def request_path(self, options: ChatOptions, *, stream: bool) -> str:
        """Where this request goes, under the base URL: the wire's path, unless the API puts the
        model or the mode in it (Gemini's ``/models/<model>:streamGenerateContent?alt=sse``)."""
        return self.wire.path

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

    def _request(
        self, prompt: Prompt, *, stream: bool
    ) -> tuple[str, dict[str, Any], dict[str, str] | None, float | None]:
        options = self.options_for(prompt)
        body = self.build_body(prompt, options, stream=stream)
        return self.request_path(options, stream=stream), body, self.request_headers(options), options.timeout

    def _whole_reply(self, response: httpx2.Response) -> bool:
        """A server that ignored ``stream: true`` and answered in one piece (SSE APIs only)."""
        return self.wire.framing == "sse" and response.headers.get("content-type", "").startswith("application/json")

    # ------------------------------------------------------------------ ChatModel

    def call(self, prompt: Prompt) -> ChatResponse:
        if self._sync_via_async:
            self.no_sync_sdk_client()
            from chatclient._sync import run_sync

            return run_sync(lambda: self.acall(prompt))
        path, body, headers, timeout = self._request(prompt, stream=False)
        data, reply_headers = self._transport.post_json(path, body, headers, timeout=timeout)
        return self.wire.parse_response(data, reply_headers)

    def stream(self, prompt: Prompt) -> Iterator[ModelEvent]:
        if self._sync_via_async:
            self.no_sync_sdk_client()
            from chatclient._sync import iterate_sync

            yield from iterate_sync(lambda: self.astream(prompt))
            return
        path, body, headers, timeout = self._request(prompt, stream=True)
        opened: AbstractContextManager[httpx2.Response] = self._transport.stream(path, body, headers, timeout=timeout)
        wire = self.wire
        with opened as response:
            if self._whole_reply(response):
                yield wire.parse_response(parse_json(response.read(), provider=wire.provider), response.headers)
                return
            decoder = wire.stream_decoder(response.headers)
            events = iter_sse if wire.framing == "sse" else iter_ndjson
            source = events(response, provider=wire.provider)
            provider = wire.provider
            for item in source:
                yield from fed(decoder, item, provider)
            decoder.finish(isinstance(source, SseStream) and source.saw_done)

    def acall(self, prompt: Prompt) -> Coroutine[Any, Any, ChatResponse]:
        """The transport's coroutine itself (``ProviderHttp.apost_parsed``), not one that awaits it.
        The request is built here; an error building it is raised when the call is awaited."""
        if self._async_via_sync:
            import asyncio

            return asyncio.to_thread(self.call, prompt)
        try:
            options = self.options_for(prompt)
            body = self.build_body(prompt, options, stream=False)
            headers = self.request_headers(options)
            path = self.request_path(options, stream=False)
        except Exception as exc:
            return _raising(exc)
        wire = self.wire
        return self._transport.apost_parsed(path, body, headers, wire.parse_response, timeout=options.timeout)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ModelEvent]:
        if self._async_via_sync:
            from ._bridge import iterate_in_thread

            # Only a sync SDK client: its stream is read in a worker thread, event by event.
            async for event in iterate_in_thread(lambda: self.stream(prompt)):
                yield event
            return
        path, body, headers, timeout = self._request(prompt, stream=True)
        opened: AbstractAsyncContextManager[httpx2.Response] = self._transport.astream(
            path, body, headers, timeout=timeout
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
            provider = wire.provider
            async for item in source:
                for model_event in fed(decoder, item, provider):
                    yield model_event
            decoder.finish(isinstance(source, SseStream) and source.saw_done)


async def _raising(error: Exception) -> ChatResponse:
    raise error
