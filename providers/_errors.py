"""The error map: a non-2xx reply, an error event inside a stream, or a transport failure, classed
into the one error tree of :mod:`chatclient.errors` (the class from the status and what the body says,
retryability from both); an HTML error page is summarised rather than quoted whole."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import httpx2
import pydantic_core

from chatclient._redact import redact_text
from chatclient.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextLengthExceededError,
    MalformedResponseError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ServerError,
)

__all__ = [
    "EVENT_ERROR_STATUS",
    "ErrorDetails",
    "error_from_event",
    "error_from_response",
    "event_status",
    "header_value",
    "parse_json",
    "transport_error",
]


class ErrorDetails(NamedTuple):
    """What a provider's error body says, in the provider's words."""

    message: str
    error_type: str | None = None
    code: str | None = None
    request_id: str | None = None
    retryable: bool | None = None
    """Set when the body says more than the status (e.g. a 429 for an exhausted quota is final)."""
    retry_after: float | None = None
    """Seconds to wait that the body gives (Google's ``RetryInfo.retryDelay``); a header's wins."""
    error_class: type[ProviderError] | None = None
    """The class the provider's own error type names, when it says more than the status (AWS
    answers a model that is not ready with a 429, and a throttled one says "too many tokens")."""


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

_AUTH_CODES = frozenset({"API_KEY_INVALID"})
"""Codes of a rejected credential sent with another status than 401 (Google answers a bad key with a 400)."""

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
    aws_type = headers.get("x-amzn-errortype")
    if aws_type and (parsed is None or (isinstance(parsed, dict) and "__type" not in parsed)):
        # AWS's JSON protocols name the error in this header ("ValidationException:http://..."); the
        # body, when it has one, may repeat it as ``__type``: the details read it from there.
        found = details({**(parsed or {}), "__type": aws_type.partition(":")[0]})
    else:
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
        "request_id": found.request_id
        or headers.get("x-request-id")
        or headers.get("request-id")
        or headers.get("x-amzn-requestid"),
        "retry_after": found.retry_after if (wait := _retry_after(headers)) is None else wait,
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
    return (found.error_class or _error_class(status, found))(found.message, **fields)


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
        if found.code in _AUTH_CODES:
            return AuthenticationError
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


def transport_error(provider: str, exc: httpx2.HTTPError) -> ProviderError:
    """Our error for an httpx2 transport failure (timeout, connection), for providers and SDK transports."""
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"The request timed out ({type(exc).__name__})", provider=provider)
    return APIConnectionError(f"Connection failed: {type(exc).__name__}: {redact_text(str(exc))}", provider=provider)
