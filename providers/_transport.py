"""The httpx2 transport of a provider (:class:`ProviderHttp`): its clients and their lifecycle, and
sending a request (one attempt, retried by :mod:`providers._retry` within :mod:`providers._deadline`).

- connection reuse: one ``httpx2.Client`` per model, one ``httpx2.AsyncClient`` per event loop
  (or the clients the application injects), each closed with the loop it belongs to, so a script
  that calls ``asyncio.run`` many times leaks neither clients, loops nor sockets;
- configuration checked when the model is built (a ``base_url`` must be an http(s) URL);
- a stream is retried only while it is being opened, never once a byte of it has been handed to the
  caller; every failure is a :class:`chatclient.ProviderError` (:mod:`providers._errors`), and an API
  key never appears in a repr, log or message (:mod:`providers._secrets`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import pydantic_core
from typing_extensions import Self

from chatclient._redact import CREDENTIAL_HEADERS, install_log_redaction, redact_url
from chatclient._version import __version__
from chatclient.errors import ConfigurationError, ProviderError

from ._cutoff import cancel_at
from ._deadline import (
    STILL_READING,
    TIMER_SLACK,
    AsyncDeadlineStream,
    Deadline,
    DeadlineStream,
    PendingSend,
    numeric_timeout,
)
from ._errors import ErrorDetails, error_from_response, parse_json, transport_error
from ._retry import Retrying, RetryPolicy
from ._secrets import PreparedHeaders, Secret, mask_credentials, put_headers
from ._watchdog import WATCHDOG

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

__all__ = ["USER_AGENT", "ModelLifecycle", "ProviderHttp", "check_base_url"]

USER_AGENT = f"chatclient/{__version__}"
"""Sent with every request unless the application sets its own (in ``headers`` or on its client)."""

install_log_redaction("httpx2")
"""httpx2 logs each request's full URL at INFO: a ``base_url`` password, a ``?key=``, for our
transport and for an official SDK's client alike."""


def check_base_url(url: str, *, provider: str) -> str:
    """``url`` without its trailing ``/``; a ``ConfigurationError`` unless it is an http(s) URL.

    Found here, when the model is built: without the check, ``"api.example.com/v1"`` fails on the
    first request as a connection error, which is retried like one and looks like a network fault.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # an unparseable host (``[::1``): its message would quote the URL whole
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        shown = redact_url(url)
        raise ConfigurationError(
            f"{provider}: base_url {shown!r} is not an http(s) URL. Give the scheme, e.g. "
            f"'https://{shown.split('://')[-1]}' (or 'http://…' for a local server)."
        )
    return url.rstrip("/")


async def _close_with_loop(
    client: httpx2.AsyncClient,
    clients: dict[asyncio.AbstractEventLoop, tuple[httpx2.AsyncClient, AsyncGenerator[None, None]]],
    loop: asyncio.AbstractEventLoop,
) -> AsyncGenerator[None, None]:
    """Suspended for the life of ``loop``; closes ``client`` when the loop shuts down.

    asyncio has no "loop is ending" callback, but ``asyncio.run`` (and ``asyncio.Runner``, which
    pytest-asyncio uses) closes every async generator still suspended in the loop, in the loop,
    before closing it (``loop.shutdown_asyncgens()``). Parking this generator in the loop makes that
    the moment our client is closed with ``await``, connections and sockets included, and its entry
    dropped, so neither the client nor the closed loop outlives the loop's run.
    """
    try:
        yield
    finally:
        clients.pop(loop, None)
        await client.aclose()


def _park(closer: AsyncGenerator[None, None]) -> None:
    """Run ``closer`` to its ``yield`` now, from synchronous code inside the running loop.

    The first ``asend`` registers the generator with the running loop (its first-iteration hook),
    which is what makes ``shutdown_asyncgens`` close it; nothing before the ``yield`` awaits, so one
    ``send`` reaches it.
    """
    try:
        closer.asend(None).send(None)
    except StopIteration:
        return
    raise AssertionError("the closer awaited before its yield")  # pragma: no cover


class ProviderHttp(Retrying):
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
        sign: Callable[[httpx2.Request], None] | None = None,
    ) -> None:
        """``sign``: adds the request's signature headers to each request built (every attempt), for
        an API that signs its requests (Bedrock's SigV4) rather than sending a fixed key."""
        self.provider = provider
        self._sign = sign
        self.base_url = check_base_url(base_url, provider=provider)
        self._headers = dict(headers)
        self._secret_headers = {k.lower(): v for k, v in (secret_headers or {}).items()}
        self._secret_names = CREDENTIAL_HEADERS.union(self._secret_headers)
        self._error_details = error_details
        self._client = http_client
        self._owns_client = http_client is None
        self._async_client = async_http_client
        self._async_clients: dict[asyncio.AbstractEventLoop, tuple[httpx2.AsyncClient, AsyncGenerator[None, None]]] = {}
        self._lock = threading.Lock()
        self._timeout = timeout
        self._timeout_deadline = numeric_timeout(timeout)
        self.retry = retry or RetryPolicy()
        self._prepared_headers: PreparedHeaders | None = None
        self._urls: dict[str, httpx2.URL] = {}

    def __repr__(self) -> str:
        return f"ProviderHttp(provider={self.provider!r}, base_url={redact_url(self.base_url)!r})"

    # ------------------------------------------------------------------ clients

    def _user_agent(self) -> dict[str, str]:
        """Our user agent, unless the application chose one (in ``headers`` or on its own client)."""
        if any(key.lower() == "user-agent" for key in self._headers):
            return {}
        for injected in (self._client if not self._owns_client else None, self._async_client):
            if injected is not None and not injected.headers.get("user-agent", "").startswith("python-httpx"):
                return {}
        return {"user-agent": USER_AGENT}

    def _request_headers(self) -> httpx2.Headers:
        """The headers of every request, built once: httpx2 copies a ``Headers`` without re-parsing."""
        return self._prepared().headers

    def _prepared(self) -> PreparedHeaders:
        prepared = self._prepared_headers
        if prepared is None:
            values = {"content-type": "application/json", **self._user_agent(), **self._headers}
            values.update((k, v.reveal()) for k, v in self._secret_headers.items() if v)
            prepared = self._prepared_headers = PreparedHeaders(httpx2.Headers(values))
        return prepared

    def _url(self, path: str) -> httpx2.URL:
        """The parsed URL of ``path``, parsed once per path."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx2.URL(f"{self.base_url}{path}")
        return url

    def client(self) -> httpx2.Client:
        client = self._client
        if client is None:
            with self._lock:  # two threads' first calls must not build two clients (one never closed)
                client = self._client
                if client is None:
                    client = self._client = httpx2.Client(timeout=self._timeout)
        return client

    def async_client(self) -> httpx2.AsyncClient:
        """The injected async client, or the one of the running loop (made on its first request).

        An ``httpx2.AsyncClient`` belongs to the loop it first ran in, so each loop gets its own; it
        is closed when that loop shuts down (see :func:`_close_with_loop`) or by :meth:`aclose`.
        """
        if self._async_client is not None:
            return self._async_client
        import asyncio

        loop = asyncio.get_running_loop()
        entry = self._async_clients.get(loop)
        if entry is not None:
            return entry[0]
        with self._lock:
            entry = self._async_clients.get(loop)
            if entry is None:
                self._forget_closed_loops()
                client = httpx2.AsyncClient(timeout=self._timeout)
                closer = _close_with_loop(client, self._async_clients, loop)
                _park(closer)
                entry = self._async_clients[loop] = (client, closer)
        return entry[0]

    def _forget_closed_loops(self) -> None:
        """Drop the clients of loops closed without ``shutdown_asyncgens`` (a bare ``loop.close()``).

        Such a client cannot be awaited any more; dropping it lets the collector reclaim it and its
        loop instead of keeping both for the life of the model.
        """
        for loop in [loop for loop in self._async_clients if loop.is_closed()]:
            del self._async_clients[loop]

    def _take(self, loop: asyncio.AbstractEventLoop) -> AsyncGenerator[None, None] | None:
        """Remove ``loop``'s entry and return its closer: whoever takes it closes it, once."""
        with self._lock:
            entry = self._async_clients.pop(loop, None)
        return entry[1] if entry is not None else None

    def close(self) -> None:
        """Close every client this object created; injected clients belong to the application.

        An async client can only be closed in its own loop. So a loop that is not running (and
        not closed) runs the close now, provided no loop runs in this thread; a running loop's
        client is left to be closed when that loop ends (or by :meth:`aclose` inside it), since
        scheduling into it from here could be cut short by its shutdown; a closed loop's client
        is dropped, as it can no longer be awaited.
        """
        asyncio = sys.modules.get("asyncio")  # not imported: nothing async ever ran, no loop runs
        try:
            inside_a_loop = asyncio is not None and asyncio.get_running_loop() is not None
        except RuntimeError:
            inside_a_loop = False
        with self._lock:
            self._forget_closed_loops()
            idle = [loop for loop in self._async_clients if not loop.is_running()]
        if not inside_a_loop:
            for loop in idle:
                closer = self._take(loop)
                if closer is not None:
                    loop.run_until_complete(closer.aclose())
        with self._lock:
            client, self._client = (self._client, None) if self._owns_client else (None, self._client)
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close every client this object created, awaiting the running loop's own."""
        import asyncio

        closer = self._take(asyncio.get_running_loop())
        if closer is not None:
            await closer.aclose()  # its ``finally`` closes the client
        self.close()

    # ------------------------------------------------------------------ deadlines

    def _deadline(self, timeout: float | None) -> Deadline | None:
        """The deadline of one request: the shortest of the request's own ``timeout``, the policy's
        ``deadline`` and a numeric model ``timeout`` (a number is a limit on the whole request, or
        retries would multiply it; an ``httpx2.Timeout`` is the explicit per-attempt opt-in)."""
        limit = self.retry.deadline
        for other in (self._timeout_deadline, timeout):
            if other is not None and (limit is None or other < limit):
                limit = other
        return Deadline(limit) if limit is not None else None

    # ------------------------------------------------------------------ requests

    def _build(
        self,
        client: httpx2.Client | httpx2.AsyncClient,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: Deadline | None = None,
    ) -> httpx2.Request:
        prepared = self._prepared()
        keys = prepared.keys
        if headers or keys is None:  # a request's own headers: through httpx2's merge, as ever
            request_headers = prepared.headers
            if headers:
                request_headers = httpx2.Headers(request_headers)
                request_headers.update(headers)
            request = client.build_request(
                "POST", self._url(path), content=pydantic_core.to_json(body), headers=request_headers
            )
        else:
            request = client.build_request("POST", self._url(path), content=pydantic_core.to_json(body))
            put_headers(request.headers, prepared, keys)
        mask_credentials(request.headers, self._secret_names)
        if self._sign is not None:
            self._sign(request)
        if deadline is not None:
            # A first attempt starts as its deadline does: only a deadline of (next to) no time is past.
            if (deadline.attempts or deadline.seconds <= TIMER_SLACK) and deadline.left() <= 0:
                raise deadline.exceeded(self.provider, "no time was left for another attempt")
            timeouts = deadline.cut_timeouts(client.timeout)
            if timeouts is not None:
                request.extensions["timeout"] = timeouts
        return request

    def _check(self, response: httpx2.Response, body: bytes) -> None:
        if response.status_code >= 400:
            raise error_from_response(self.provider, response.status_code, response.headers, body, self._error_details)

    def _read_error(self, exc: httpx2.HTTPError, deadline: Deadline | None) -> ProviderError:
        """A failure while reading a stream; a read cut short by the deadline says so."""
        if deadline is not None and isinstance(exc, httpx2.TimeoutException) and deadline.expired():
            return deadline.exceeded(self.provider, "the stream was abandoned while being read")
        return transport_error(self.provider, exc)

    def _send(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """One attempt: the response, read unless ``stream``; an error for a transport failure or a
        non-2xx status. The one method a transport of another kind (an official SDK client) replaces.

        Under a deadline the exchange is watched from the moment it is sent, and the body is read
        through :class:`DeadlineStream` rather than by httpx2's ``send``, whose reads only the
        per-read timeout bounds."""
        client = self.client()
        request = self._build(client, path, body, headers, deadline)
        if deadline is not None:
            response = self._send_within(client, request, deadline)
            if not stream or response.status_code >= 400:
                self._read_body(response)
        else:
            try:
                response = client.send(request, stream=stream)
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
        if response.status_code >= 400:
            content = response.read()
            response.close()
            self._check(response, content)
        return response

    def _send_within(self, client: httpx2.Client, request: httpx2.Request, deadline: Deadline) -> httpx2.Response:
        """Send ``request`` watched by the watchdog; the response's body is a :class:`DeadlineStream`
        that carries the watch on until the body has been read."""
        watch = WATCHDOG.watch(deadline.ends, pending=PendingSend(client, request))
        try:
            response = client.send(request, stream=True)
        except BaseException as exc:
            WATCHDOG.release(watch)
            if not isinstance(exc, httpx2.HTTPError):
                raise
            if watch.fired:
                raise deadline.exceeded(self.provider, STILL_READING) from exc
            raise transport_error(self.provider, exc) from exc
        watch.response = response
        response.stream = DeadlineStream(response, deadline, self.provider, watch)
        return response

    def _read_body(self, response: httpx2.Response, deadline: Deadline | None = None) -> None:
        """Read the whole body, within ``deadline`` when its stream is not bounded already; the
        response is closed if that fails. A body that was there already (an in-process transport's)
        is never read through its stream, so its watch is released here: it would otherwise keep the
        response in the watchdog until the deadline."""
        if deadline is not None and not isinstance(response.stream, DeadlineStream):
            response.stream = DeadlineStream(response, deadline, self.provider)
        try:
            response.read()
        except BaseException as exc:
            response.close()
            if isinstance(exc, httpx2.HTTPError):
                raise transport_error(self.provider, exc) from exc
            raise
        if isinstance(response.stream, DeadlineStream):
            response.stream.release()

    async def _asend(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """As :meth:`_send`; under a deadline the exchange (connect, headers, and the body unless
        ``stream``) is cancelled when it passes, and that becomes the deadline's error (as
        :func:`~providers._deadline.cut_off` does for an SDK's exchange). One coroutine: every
        coroutine between the caller and the socket is resumed at each of the exchange's awaits."""
        client = self.async_client()
        request = self._build(client, path, body, headers, deadline)
        cut = None if deadline is None else cancel_at(max(deadline.left(), 0.0))
        try:
            try:
                response = await client.send(request, stream=stream)
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            if response.status_code >= 400:
                content = await response.aread()
                await response.aclose()
        except BaseException as exc:
            if cut is not None and cut.stop() and deadline is not None:
                raise deadline.exceeded(self.provider, STILL_READING) from exc
            raise
        if cut is not None:
            cut.stop()
        if response.status_code >= 400:
            self._check(response, content)
        return response

    def post_json(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> tuple[Any, httpx2.Headers]:
        """POST ``body`` as JSON, return the parsed JSON reply and its headers; retried.

        ``timeout`` bounds the whole request, retries included (a request's ``ChatOptions.timeout``).
        """
        response = self._send_retried(path, body, headers, self._deadline(timeout), stream=False)
        return parse_json(response.content, provider=self.provider), response.headers

    async def apost_json(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> tuple[Any, httpx2.Headers]:
        return await self.apost_parsed(path, body, headers, _as_sent, timeout=timeout)

    async def apost_parsed(
        self,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        parse: Callable[[Any, httpx2.Headers], T],
        *,
        timeout: float | None = None,
    ) -> T:
        """As :meth:`post_json`, the reply handed to ``parse(json, headers)``: a model's async call
        awaits this one coroutine. The first attempt is awaited here and the retry loop entered only
        after it failed, so a request that succeeds pays for no loop."""
        deadline = self._deadline(timeout)
        try:
            response = await self._asend(path, body, headers, deadline, stream=False)
        except ProviderError as error:
            response = await self._aretried(error, path, body, headers, deadline, stream=False)
        return parse(parse_json(response.content, provider=self.provider), response.headers)

    @contextmanager
    def stream(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> Iterator[httpx2.Response]:
        """Open a streaming POST (retried until the status is known good), yield the response.

        Errors while reading the body are mapped but never retried: part of it may have been
        delivered already. With a deadline, each read of the body is bounded by the time that was
        left when the stream opened, and the body as a whole by the deadline.
        """
        deadline = self._deadline(timeout)
        response = self._send_retried(path, body, headers, deadline, stream=True)
        if deadline is not None and not isinstance(response.stream, DeadlineStream):  # an SDK's response
            response.stream = DeadlineStream(response, deadline, self.provider)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise self._read_error(exc, deadline) from exc
        finally:
            response.close()

    @asynccontextmanager
    async def astream(
        self, path: str, body: Any, headers: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[httpx2.Response]:
        deadline = self._deadline(timeout)
        try:
            response = await self._asend(path, body, headers, deadline, stream=True)
        except ProviderError as error:
            response = await self._aretried(error, path, body, headers, deadline, stream=True)
        if deadline is not None:
            response.stream = AsyncDeadlineStream(response, deadline, self.provider)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise self._read_error(exc, deadline) from exc
        finally:
            await response.aclose()


def _as_sent(data: Any, headers: httpx2.Headers) -> tuple[Any, httpx2.Headers]:
    return data, headers


class ModelLifecycle:
    """``close``/``aclose`` and both context managers for a model that talks through ``self._http``.

    A model holds network resources (connection pools, sockets) in its :class:`ProviderHttp`; this
    gives every provider the same way to release them, ``with model:`` / ``async with model:``
    included, instead of each writing (or forgetting) its own. Clients passed in by the
    application are never closed: they are the application's.
    """

    _http: ProviderHttp

    def close(self) -> None:
        """Close the HTTP clients this model created (sync, and each event loop's async one)."""
        self._http.close()

    async def aclose(self) -> None:
        """Close the HTTP clients this model created, awaiting the running loop's own."""
        await self._http.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()
