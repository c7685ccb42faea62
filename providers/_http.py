"""HTTP plumbing shared by the providers: httpx2 clients, retries, error mapping, secrets.

A provider is a pure translation (``Prompt`` → request JSON, response JSON/stream events →
``ChatResponse``) on top of :class:`ProviderHttp`, which owns everything that talks to the network:

- connection reuse: one ``httpx2.Client`` per model, one ``httpx2.AsyncClient`` per event loop
  (or the clients the application injects), each closed with the loop it belongs to, so a script
  that calls ``asyncio.run`` many times leaks neither clients, loops nor sockets;
- configuration checked when the model is built (a ``base_url`` must be an http(s) URL);
- retries for retryable errors (429, 5xx, connection), honouring ``Retry-After`` /
  ``retry-after-ms`` / ``x-should-retry``, capped, within a total deadline (``RetryPolicy.deadline``,
  a numeric model ``timeout`` or a request's ``timeout``, the shortest: see :class:`_Deadline`) that
  bounds the whole exchange, headers and body, however slowly they trickle in (the watchdog thread
  of :mod:`providers._watchdog` for sync requests, the loop's cuts of :mod:`providers._cutoff` for
  async ones); a 5xx
  whose body says the request itself is
  invalid (a validation or chat-template error) is final; a stream is retried only while it is
  being opened, never once a byte of it has been handed to the caller;
- one error tree: every failure is a :class:`chatclient.ProviderError` subclass with the status,
  the provider's error type and request id; an API key never appears in a repr, log or message
  (``repr(request.headers)`` masks every credential header, not only the ``authorization`` that
  httpx2 masks; a ``base_url``'s password and ``?key=`` are masked in reprs, errors and httpx2's
  request log: one rule, :mod:`chatclient._redact`), and an HTML error page is summarised rather
  than quoted whole.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import re
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

import httpx2
import pydantic_core
from typing_extensions import Self

from chatclient._redact import CREDENTIAL_HEADERS, MASK, install_log_redaction, is_secret_name, redact_text, redact_url
from chatclient._version import __version__
from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextLengthExceededError,
    MalformedResponseError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ServerError,
)

from ._cutoff import Cut, cancel_at, cut_at
from ._watchdog import WATCHDOG, Watch, shut_down

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

__all__ = [
    "CREDENTIAL_HEADERS",
    "DEADLINE_EXCEEDED",
    "EVENT_ERROR_STATUS",
    "USER_AGENT",
    "ErrorDetails",
    "ModelLifecycle",
    "ProviderHttp",
    "RedactedHeaders",
    "RetryPolicy",
    "Secret",
    "check_base_url",
    "error_from_event",
    "error_from_response",
    "event_status",
    "transport_error",
    "parse_json",
]

_log = logging.getLogger("chatclient.providers")

USER_AGENT = f"chatclient/{__version__}"
"""Sent with every request unless the application sets its own (in ``headers`` or on its client)."""

install_log_redaction("httpx2")
"""httpx2 logs each request's full URL at INFO: a ``base_url`` password, a ``?key=``, for our
transport and for an official SDK's client alike."""


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


class RedactedHeaders(httpx2.Headers):
    """``httpx2.Headers`` whose repr masks every credential header, not only ``authorization``.

    httpx2 masks ``authorization`` and ``proxy-authorization`` only, so ``repr(request.headers)``
    (in a debugger, a log line, a test failure, an error reporter's dump of locals) would show
    Anthropic's ``x-api-key`` or Azure's ``api-key`` in clear. Each request we send carries its
    headers in this class; the values themselves are unchanged. Masked: the provider's own key
    headers and every name :func:`chatclient._redact.is_secret_name` calls secret.
    """

    def __init__(self, headers: httpx2.Headers, secret_names: frozenset[str] = CREDENTIAL_HEADERS) -> None:
        """``secret_names`` are lower-case; ProviderHttp computes them once, not per request."""
        super().__init__(headers)  # copies the parsed list: no re-parsing
        self._secret_names = secret_names

    def __repr__(self) -> str:
        shown = [
            (key, MASK if key.lower() in self._secret_names or is_secret_name(key) else value)
            for key, value in self.multi_items()
        ]
        as_dict = dict(shown)
        return f"Headers({as_dict!r})" if len(as_dict) == len(shown) else f"Headers({shown!r})"


def _redact(headers: httpx2.Headers, secret_names: frozenset[str]) -> None:
    """Make the request's own (just built) ``headers`` a :class:`RedactedHeaders` in place: the same
    object, the same values, the masking repr, without copying them once more per request."""
    headers.__class__ = RedactedHeaders
    headers._secret_names = secret_names  # type: ignore[attr-defined]


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


class _PreparedHeaders:
    """Holds request headers that include revealed credentials, without ever showing them.

    ``keys``: their lower-case names, for :func:`_put_headers`; ``None`` when one of them is a
    header httpx2 sets while it builds a request (``host``, ``content-length``, ``transfer-encoding``):
    those go through httpx2's own merge, before the request is prepared."""

    __slots__ = ("headers", "keys")

    def __init__(self, headers: httpx2.Headers) -> None:
        self.headers = headers
        keys = frozenset(lower for _, lower, _ in headers._list)
        self.keys = None if keys & _BUILT_HEADERS else keys

    def __repr__(self) -> str:
        return "_PreparedHeaders(***)"


_BUILT_HEADERS = frozenset((b"host", b"content-length", b"transfer-encoding"))


def _put_headers(headers: httpx2.Headers, prepared: _PreparedHeaders, keys: frozenset[bytes]) -> None:
    """Put the prepared headers into a just built request's ``headers``, each replacing the client's
    header of that name: what httpx2's merge does (``Headers.update``: a pop per name the client
    has, then an extend), in one pass over the list instead of three list comprehensions per name.
    The merge cost 84 k instructions per request more than this (``_build``: 250.6 k with it, 166.6 k
    without, callgrind): it copies both header sets, re-parses ours and decodes every name per lookup."""
    entries = headers._list
    entries[:] = [entry for entry in entries if entry[1] not in keys]
    entries.extend(prepared.headers._list)
    headers._encoding = None  # worked out again from the values, as for a new Headers


class RetryPolicy(NamedTuple):
    """How failed requests are retried: exponential backoff, or what the provider asks for.

    A ``NamedTuple`` rather than a frozen dataclass (so for ``ErrorDetails`` and ``WireMapping``): as
    immutable, built and read the same way (``policy._replace(...)`` for a changed copy), and defined
    at import for a tenth of a frozen dataclass's cost, which compiles six methods per class.
    """

    max_retries: int = 2
    """Retries after the first attempt (0 turns retrying off)."""
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    """A provider's ``Retry-After`` longer than this is not waited for: the error is raised."""
    deadline: float | None = None
    """Seconds one request may take in all, attempts and waits together (``None``: no limit but
    ``max_retries`` and a numeric model ``timeout``, which is a deadline too; the shorter applies).
    No retry starts, and no wait is taken, that would end past it; the attempt that runs into it has
    its timeouts cut to the time left. Hitting it raises ``APITimeoutError``."""


DEADLINE_EXCEEDED = "deadline_exceeded"
"""The ``error_type`` of the ``APITimeoutError`` raised when a request's deadline is hit."""

_TIMER_SLACK = 0.005


def _each_within(timeout: httpx2.Timeout, seconds: float) -> bool:
    parts = (timeout.connect, timeout.read, timeout.write, timeout.pool)
    return all(part is not None and part <= seconds for part in parts)


_last_within: tuple[httpx2.Timeout, float] | None = None
"""The last (client timeout, deadline) found :func:`_each_within`: every request of a model asks the
same question of the same two values, so it is answered once (one tuple: a thread reads all or none)."""


def _within(timeout: httpx2.Timeout, seconds: float) -> bool:
    global _last_within
    last = _last_within
    if last is not None and last[0] is timeout and last[1] == seconds:
        return True
    if not _each_within(timeout, seconds):
        return False
    _last_within = (timeout, seconds)
    return True


class _Deadline:
    """The time one request may still take, across its attempts and the waits between them.

    ``timeout`` is the client's per-attempt timeout (the model's, or the injected client's); each
    attempt gets it, each part cut to the time left, so the caller's limit holds whatever the
    per-attempt value.
    """

    __slots__ = ("attempts", "ends", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.attempts = 0

    def left(self) -> float:
        return self.ends - time.monotonic()

    def expired(self) -> bool:
        """Whether it has passed (give or take a timer's rounding): a timeout now is the deadline's."""
        return self.left() <= _TIMER_SLACK

    def attempt_timeouts(self, timeout: httpx2.Timeout) -> dict[str, float]:
        """The timeouts of the next attempt (as httpx2's request extension); counts the attempt."""
        left = max(self.left(), 0.001)
        self.attempts += 1
        parts = timeout.as_dict()
        return {name: left if value is None else min(value, left) for name, value in parts.items()}

    def cut_timeouts(self, timeout: httpx2.Timeout) -> dict[str, float] | None:
        """Like :meth:`attempt_timeouts`, but ``None`` for a first attempt whose own timeouts all end
        within the deadline already (a numeric model ``timeout``: the common case pays for no cut)."""
        if self.attempts == 0 and _within(timeout, self.seconds):
            self.attempts = 1
            return None
        return self.attempt_timeouts(timeout)

    def exceeded(self, provider: str, why: str) -> APITimeoutError:
        """The error of a deadline hit, logged at INFO here: the one place every hit passes."""
        runs = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        message = f"The deadline of {self.seconds:g} s was reached after {runs} ({why})"
        _log.info("%s request: %s", provider, message)
        return APITimeoutError(message, provider=provider, error_type=DEADLINE_EXCEEDED, retryable=False)


_STILL_READING = "the reply had not come in full"


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body read within the request's deadline, whether streamed or read whole.

    Each read is bounded by the time left when the attempt began (its read timeout was cut), and the
    clock is checked at each chunk; but a body that keeps trickling in, a few bytes within each read
    timeout, would outlive both. So until the body has been read the exchange is registered with
    the process's :data:`~providers._watchdog.WATCHDOG` (from the moment it was sent, ``watch``, or
    from the first read), which shuts its socket down at the deadline; the blocked read returns, and
    whatever it returns (an error, or the end of a close-delimited body) becomes the deadline's error.
    """

    def __init__(
        self, response: httpx2.Response, deadline: _Deadline, provider: str, watch: Watch | None = None
    ) -> None:
        self._inner: Any = response.stream
        self._response, self._deadline, self._provider = response, deadline, provider
        self._watch = watch

    def __iter__(self) -> Iterator[bytes]:
        deadline = self._deadline
        ends = deadline.ends
        watch = self._watch
        if watch is None:
            watch = self._watch = WATCHDOG.watch(ends, self._response)
        try:
            for chunk in self._inner:
                if time.monotonic() > ends:
                    raise deadline.exceeded(self._provider, _STILL_READING)
                yield chunk
            if watch.fired:  # the watchdog's shutdown can look like the end of a close-delimited body
                raise deadline.exceeded(self._provider, _STILL_READING)
        except httpx2.TransportError as exc:
            if watch.fired or deadline.expired():
                raise deadline.exceeded(self._provider, _STILL_READING) from exc
            raise
        finally:
            self._release()

    def _release(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            WATCHDOG.release(watch)

    def close(self) -> None:
        self._release()  # first: once closed, the connection may serve another request
        self._inner.close()


class _PendingSend:
    """A request sent through ``client`` whose response has not come: what the watchdog cuts when its
    headers are still trickling in at the deadline. Only then is the pool searched, for the HTTP/1.1
    connection carrying this request (the one whose request shares its ``extensions``); its socket
    is shut down. The pool's inner names are httpcore2's, so a pool of another shape is left alone
    (each read is still bounded by the cut read timeout)."""

    __slots__ = ("_client", "_request")

    def __init__(self, client: httpx2.Client, request: httpx2.Request) -> None:
        self._client, self._request = client, request

    def abort(self) -> None:
        import socket

        pool = getattr(self._client._transport_for_url(self._request.url), "_pool", None)
        extensions = self._request.extensions
        for waiting in list(getattr(pool, "_requests", ())):
            if getattr(waiting.request, "extensions", None) is extensions:
                connection: Any = getattr(waiting.connection, "_connection", None)
                if type(connection).__name__ != "HTTP11Connection":
                    return  # HTTP/2 carries other requests; a connection not yet made has no socket
                sock = connection._network_stream.get_extra_info("socket")
                if isinstance(sock, socket.socket):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return


class _AsyncDeadlineStream(httpx2.AsyncByteStream):
    """As :class:`_DeadlineStream`, with the event loop's timer (:func:`providers._cutoff.cut_at`) in
    place of the watchdog thread."""

    def __init__(self, response: httpx2.Response, deadline: _Deadline, provider: str) -> None:
        self._inner: Any = response.stream
        self._response, self._deadline, self._provider = response, deadline, provider
        self._cut: Cut | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        deadline = self._deadline
        ends = deadline.ends
        response = self._response
        cut = self._cut = cut_at(max(deadline.left(), 0.0), lambda: shut_down(response))
        try:
            async for chunk in self._inner:
                if time.monotonic() > ends:
                    raise deadline.exceeded(self._provider, _STILL_READING)
                yield chunk
            if cut.fired:  # the shutdown can look like the end of a close-delimited body
                raise deadline.exceeded(self._provider, _STILL_READING)
        except httpx2.TransportError as exc:
            if cut.fired or deadline.expired():
                raise deadline.exceeded(self._provider, _STILL_READING) from exc
            raise
        finally:
            self._stop()

    def _stop(self) -> None:
        cut, self._cut = self._cut, None
        if cut is not None:
            cut.stop()

    async def aclose(self) -> None:
        self._stop()
        await self._inner.aclose()


async def _cut_off(deadline: _Deadline, provider: str, exchange: Awaitable[T]) -> T:
    """``await exchange`` (sending a request, receiving its reply), its task cancelled at the deadline,
    which then raises the deadline's error: this bounds what no read timeout can, a reply whose
    headers or body trickle in a few bytes within each read's timeout (see :mod:`providers._cutoff`)."""
    cut = cancel_at(max(deadline.left(), 0.0))
    try:
        result = await exchange
    except BaseException as exc:
        if cut.stop():
            raise deadline.exceeded(provider, _STILL_READING) from exc
        raise
    cut.stop()
    return result


class ErrorDetails(NamedTuple):
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


def header_value(headers: Mapping[str, str] | None, name: bytes) -> str | None:
    """A reply header's value (``name`` in lower case), as ``headers.get`` gives it: every reply asks
    for its request id, and httpx2's own lookup lowercases, encodes and decodes on each ask (a loop
    here, not a comprehension: that costs a frame). Other mappings (an SDK's) are asked as they are."""
    if headers is None:
        return None
    if type(headers) is not httpx2.Headers:
        return headers.get(name.decode())
    found = None
    for _, key, value in headers._list:  # (raw key, lower-case key, value)
        if key == name:
            if found is not None:
                return headers.get(name.decode())  # repeated: httpx2 joins the values
            found = value
    if found is None:
        return None
    try:
        return found.decode("ascii")  # what every encoding httpx2 picks makes of an ASCII value
    except UnicodeDecodeError:
        return headers.get(name.decode())


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
        found = ErrorDetails(_describe_body(status, headers, body))
    return _classified(provider, status, headers, parsed, found)


def _classified(provider: str, status: int, headers: httpx2.Headers, parsed: Any, found: ErrorDetails) -> ProviderError:
    """The one table: the class from the status and what the body says, retryability from both."""
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


EVENT_ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "invalid_request": 400,
    "invalid_prompt": 400,
    "bad_request": 400,
    "context_length_exceeded": 400,
    "authentication_error": 401,
    "invalid_api_key": 401,
    "billing_error": 402,
    "permission_error": 403,
    "permission_denied": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
    "server_is_overloaded": 529,
    "overloaded": 529,
}
"""The HTTP status an error *event* stands for (an error inside a 200 stream, or a failed response
object), by its type or code, across the providers' vocabularies. The status then goes through the
same classification as a real HTTP error, so a mid-stream ``rate_limit_error`` and a 429 are one
error class with one retry rule."""

_EVENT_HINTS = (
    ("context_length", 400),
    ("context length", 400),
    ("rate_limit", 429),
    ("overloaded", 529),
    ("authentication", 401),
    ("api_key", 401),
    ("permission", 403),
    ("invalid_request", 400),
)


def event_status(found: ErrorDetails) -> int | None:
    """The status an error event stands for: by its code or type, else by words in it; ``None`` if unknown."""
    for kind in (found.code, found.error_type):
        if kind and (status := EVENT_ERROR_STATUS.get(kind.lower())) is not None:
            return status
    hint = " ".join(filter(None, (found.message, found.error_type, found.code))).lower()
    return next((status for word, status in _EVENT_HINTS if word in hint), None)


def error_from_event(
    provider: str,
    body: Any,
    details: Callable[[Any], ErrorDetails | None],
    *,
    status: int | None = None,
    headers: httpx2.Headers | None = None,
    unknown: type[ProviderError] | None = None,
) -> ProviderError:
    """The error for an error event, classed by the table of :func:`error_from_response`.

    ``status`` is the one the event carries (Ollama's ``status``, a numeric ``code``), if any: it
    wins and is reported; otherwise the event's type or code gives the status to class it by
    (:data:`EVENT_ERROR_STATUS`) and the error's ``status`` stays ``None`` (no HTTP status was
    sent). An event the table does not know is a server error, or ``unknown`` when given.
    """
    found = details(body) or ErrorDetails(f"Error in the reply: {body!r:.200}")
    classed_by = status or event_status(found)
    if classed_by is None and unknown is not None:
        return unknown(found.message, provider=provider, error_type=found.code or found.error_type, body=body)
    error = _classified(provider, classed_by or 500, headers or httpx2.Headers(), body, found)
    error.status = status
    return error


# Patterns, not compiled ones: only an HTML error page needs them, and ``re`` compiles and caches them then.
_TITLE = rb"<title[^>]*>(.*?)</title\s*>"
_INVISIBLE = rb"<(script|style|head)\b.*?</\1\s*>"
_TAG = rb"<[^>]*>"
_EXCERPT = 200


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _describe_body(status: int, headers: httpx2.Headers, body: bytes) -> str:
    """The message for an error reply that is not the provider's JSON error.

    Proxies and load balancers answer 502/503/504 with an HTML page of several kilobytes; quoting it
    whole would bury the one fact that matters (the status) in markup. An HTML page becomes its
    status, its title and a short excerpt of its visible text; any other text is kept, on one line.
    """
    if not body.strip():
        return f"HTTP {status} with no body"
    head = body[:512].lstrip().lower()
    is_html = "html" in headers.get("content-type", "").lower() or head.startswith((b"<!doctype html", b"<html"))
    if not is_html:
        return _one_line(body.decode("utf-8", "replace"), 500)
    reason = httpx2.codes.get_reason_phrase(status)
    title_match = re.search(_TITLE, body, re.IGNORECASE | re.DOTALL)
    import html  # only for an HTML error page

    title = _one_line(html.unescape(title_match.group(1).decode("utf-8", "replace")), 120) if title_match else ""
    visible = re.sub(_TAG, b" ", re.sub(_INVISIBLE, b" ", body, flags=re.IGNORECASE | re.DOTALL))
    excerpt = _one_line(html.unescape(visible.decode("utf-8", "replace")), _EXCERPT)
    parts = [f"HTTP {status}{' ' + reason if reason else ''}: the server answered with an HTML page, not an API error"]
    if title:
        parts.append(f"title {title!r}")
    if excerpt and excerpt != title:
        parts.append(f"text {excerpt!r}")
    return "; ".join(parts) + f" ({len(body)} bytes)"


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


def _numeric_timeout(timeout: object) -> float | None:
    """A model ``timeout`` given as a number (a total limit too), ``None`` for an ``httpx2.Timeout``."""
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    return None


def transport_error(provider: str, exc: httpx2.HTTPError) -> ProviderError:
    """Our error for an httpx2 transport failure (timeout, connection), for providers and SDK transports."""
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=provider)
    return APIConnectionError(f"Connection failed: {type(exc).__name__}: {redact_text(str(exc))}", provider=provider)


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
        self._timeout_deadline = _numeric_timeout(timeout)
        self.retry = retry or RetryPolicy()
        self._prepared_headers: _PreparedHeaders | None = None
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

    def _prepared(self) -> _PreparedHeaders:
        prepared = self._prepared_headers
        if prepared is None:
            values = {"content-type": "application/json", **self._user_agent(), **self._headers}
            values.update((k, v.reveal()) for k, v in self._secret_headers.items() if v)
            prepared = self._prepared_headers = _PreparedHeaders(httpx2.Headers(values))
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

    # ------------------------------------------------------------------ retries

    def _deadline(self, timeout: float | None) -> _Deadline | None:
        """The deadline of one request: the shortest of the request's own ``timeout``, the policy's
        ``deadline`` and a numeric model ``timeout`` (a number is a limit on the whole request, or
        retries would multiply it; an ``httpx2.Timeout`` is the explicit per-attempt opt-in)."""
        limit = self.retry.deadline
        for other in (self._timeout_deadline, timeout):
            if other is not None and (limit is None or other < limit):
                limit = other
        return _Deadline(limit) if limit is not None else None

    def _should_retry(self, error: BaseException) -> bool:
        if not isinstance(error, ProviderError) or not error.retryable or self.retry.max_retries == 0:
            return False
        return error.retry_after is None or error.retry_after <= self.retry.max_retry_after

    def _next_wait(self, error: ProviderError, attempt: int, deadline: _Deadline | None) -> float:
        """The pause before retry ``attempt``, or the error to raise instead (``error`` or the deadline's)."""
        if error.error_type == DEADLINE_EXCEEDED:
            raise error
        if deadline is not None and isinstance(error, APITimeoutError) and deadline.expired():
            raise deadline.exceeded(self.provider, "the last attempt was abandoned") from error
        if not self._should_retry(error) or attempt > self.retry.max_retries:
            raise error
        wait = self._wait(error, attempt)
        if deadline is not None and wait >= deadline.left():
            raise deadline.exceeded(self.provider, f"{error}; a retry in {wait:.2f} s would end past it") from error
        self._before_retry(attempt, error, wait)
        return wait

    def _wait(self, error: ProviderError, attempt: int) -> float:
        """What the provider asked for (``Retry-After``), else exponential backoff, capped."""
        if error.retry_after is not None:
            return float(error.retry_after)
        return float(min(self.retry.max_backoff, self.retry.initial_backoff * (2 ** (attempt - 1))))

    def _before_retry(self, attempt: int, error: ProviderError, wait: float) -> None:
        """Each retry is logged and reported to the request's observers (``chatclient.observation``)."""
        _log.info("%s request failed (%s); retry %d in %.2f s", self.provider, error, attempt, wait)
        from chatclient.observation import notify_retry  # only when a request is retried

        notify_retry(attempt, error, wait, self.provider)

    def _send_retried(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: _Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """One attempt, then more after each retryable failure while the policy and the deadline allow.

        The success path is one plain call (no retry loop, no closure): the loop is entered only
        after a failure, so a request that succeeds first time pays for nothing but the deadline's
        clock (when set).
        """
        try:
            return self._send(path, body, headers, deadline, stream=stream)
        except ProviderError as error:
            return self._retried(error, path, body, headers, deadline, stream=stream)

    def _retried(
        self,
        failed: ProviderError,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: _Deadline | None,
        *,
        stream: bool,
    ) -> httpx2.Response:
        """The retries after a first attempt failed with ``failed``."""
        attempt = 1
        while True:
            time.sleep(self._next_wait(failed, attempt, deadline))
            attempt += 1
            try:
                return self._send(path, body, headers, deadline, stream=stream)
            except ProviderError as error:
                failed = error

    async def _aretried(
        self,
        failed: ProviderError,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: _Deadline | None,
        *,
        stream: bool,
    ) -> httpx2.Response:
        """As :meth:`_retried`. The hot paths await :meth:`_asend` themselves and this only after it
        failed: every coroutine between a caller and the socket is resumed at each of the request's
        awaits, and 300 requests in flight resume a chain thousands of times."""
        import asyncio

        attempt = 1
        while True:
            await asyncio.sleep(self._next_wait(failed, attempt, deadline))
            attempt += 1
            try:
                return await self._asend(path, body, headers, deadline, stream=stream)
            except ProviderError as error:
                failed = error

    # ------------------------------------------------------------------ requests

    def _build(
        self,
        client: httpx2.Client | httpx2.AsyncClient,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: _Deadline | None = None,
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
            _put_headers(request.headers, prepared, keys)
        _redact(request.headers, self._secret_names)
        if deadline is not None:
            # A first attempt starts as its deadline does: only a deadline of (next to) no time is past.
            if (deadline.attempts or deadline.seconds <= _TIMER_SLACK) and deadline.left() <= 0:
                raise deadline.exceeded(self.provider, "no time was left for another attempt")
            timeouts = deadline.cut_timeouts(client.timeout)
            if timeouts is not None:
                request.extensions["timeout"] = timeouts
        return request

    def _check(self, response: httpx2.Response, body: bytes) -> None:
        if response.status_code >= 400:
            raise error_from_response(self.provider, response.status_code, response.headers, body, self._error_details)

    def _read_error(self, exc: httpx2.HTTPError, deadline: _Deadline | None) -> ProviderError:
        """A failure while reading a stream; a read cut short by the deadline says so."""
        if deadline is not None and isinstance(exc, httpx2.TimeoutException) and deadline.expired():
            return deadline.exceeded(self.provider, "the stream was abandoned while being read")
        return transport_error(self.provider, exc)

    def _send(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: _Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """One attempt: the response, read unless ``stream``; an error for a transport failure or a
        non-2xx status. The one method a transport of another kind (an official SDK client) replaces.

        Under a deadline the exchange is watched from the moment it is sent, and the body is read
        through :class:`_DeadlineStream` rather than by httpx2's ``send``, whose reads only the
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

    def _send_within(self, client: httpx2.Client, request: httpx2.Request, deadline: _Deadline) -> httpx2.Response:
        """Send ``request`` watched by the watchdog; the response's body is a :class:`_DeadlineStream`
        that carries the watch on until the body has been read."""
        watch = WATCHDOG.watch(deadline.ends, pending=_PendingSend(client, request))
        try:
            response = client.send(request, stream=True)
        except BaseException as exc:
            WATCHDOG.release(watch)
            if not isinstance(exc, httpx2.HTTPError):
                raise
            if watch.fired:
                raise deadline.exceeded(self.provider, _STILL_READING) from exc
            raise transport_error(self.provider, exc) from exc
        watch.response = response
        response.stream = _DeadlineStream(response, deadline, self.provider, watch)
        return response

    def _read_body(self, response: httpx2.Response, deadline: _Deadline | None = None) -> None:
        """Read the whole body, within ``deadline`` when its stream is not bounded already; the
        response is closed if that fails."""
        if deadline is not None and not isinstance(response.stream, _DeadlineStream):
            response.stream = _DeadlineStream(response, deadline, self.provider)
        try:
            response.read()
        except BaseException as exc:
            response.close()
            if isinstance(exc, httpx2.HTTPError):
                raise transport_error(self.provider, exc) from exc
            raise

    async def _asend(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: _Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """As :meth:`_send`; under a deadline the exchange (connect, headers, and the body unless
        ``stream``) is cancelled when it passes (:func:`_cut_off`)."""
        client = self.async_client()
        request = self._build(client, path, body, headers, deadline)
        if deadline is None:
            return await self._aexchange(client, request, stream=stream)
        return await _cut_off(deadline, self.provider, self._aexchange(client, request, stream=stream))

    async def _aexchange(self, client: httpx2.AsyncClient, request: httpx2.Request, *, stream: bool) -> httpx2.Response:
        try:
            response = await client.send(request, stream=stream)
        except httpx2.HTTPError as exc:
            raise transport_error(self.provider, exc) from exc
        if response.status_code >= 400:
            content = await response.aread()
            await response.aclose()
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
        deadline = self._deadline(timeout)
        try:
            response = await self._asend(path, body, headers, deadline, stream=False)
        except ProviderError as error:
            response = await self._aretried(error, path, body, headers, deadline, stream=False)
        return parse_json(response.content, provider=self.provider), response.headers

    async def apost_parsed(
        self,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        parse: Callable[[Any, httpx2.Headers], T],
        *,
        timeout: float | None = None,
    ) -> T:
        """As :meth:`apost_json`, the reply handed to ``parse(json, headers)``: the model's async
        call awaits this coroutine alone, and it awaits the client's ``send`` itself (the first
        attempt of :meth:`_asend`, inline). Every coroutine between a caller and the socket is resumed
        at each of the request's awaits, thousands of times for 300 requests in flight; a failure
        goes the long way, through the same retries."""
        deadline = self._deadline(timeout)
        try:
            client = self.async_client()
            request = self._build(client, path, body, headers, deadline)
            try:
                if deadline is None:
                    response = await client.send(request)
                else:  # _cut_off inline: a coroutine less between the caller and the socket
                    cut = cancel_at(max(deadline.left(), 0.0))
                    try:
                        response = await client.send(request)
                    except BaseException as exc:
                        if cut.stop():
                            raise deadline.exceeded(self.provider, _STILL_READING) from exc
                        raise
                    cut.stop()
            except httpx2.HTTPError as exc:
                raise transport_error(self.provider, exc) from exc
            if response.status_code >= 400:
                content = await response.aread()
                await response.aclose()
                self._check(response, content)
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
        if deadline is not None and not isinstance(response.stream, _DeadlineStream):  # an SDK's response
            response.stream = _DeadlineStream(response, deadline, self.provider)
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
            response.stream = _AsyncDeadlineStream(response, deadline, self.provider)
        try:
            yield response
        except httpx2.HTTPError as exc:
            raise self._read_error(exc, deadline) from exc
        finally:
            await response.aclose()


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
