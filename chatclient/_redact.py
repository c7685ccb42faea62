"""Masking credentials wherever the library shows something: reprs, log lines, error messages.

One rule for every place, so a header that is masked in a model's repr is masked in an options
repr, an error and a log line too:

- a header, query parameter or mapping key is secret when its name says so
  (:func:`is_secret_name`: ``authorization``, ``api-key``, ``x-api-key``, ``cookie``, anything
  with ``token``, ``secret``, ``password`` or ``api_key`` in it, a ``key=`` or ``sig=`` query
  parameter ...);
- a URL shows its user name, never its password (``https://user:[secure]@host``), and the values of
  its secret query parameters are masked (``?key=[secure]``).

Values are masked, never dropped, so a reader still sees that a credential was there. Only what is
*shown* changes; what is sent is untouched. Names are judged, not values: a credential under an
innocent name (``x-team: sk-...``) is not found.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = [
    "CREDENTIAL_HEADERS",
    "MASK",
    "RedactingLogFilter",
    "install_log_redaction",
    "is_secret_name",
    "redact_mapping",
    "redact_text",
    "redact_url",
]

MASK = "[secure]"
"""What a secret value is shown as (httpx2's own mask for ``authorization``)."""

CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
"""The providers' key headers (Anthropic's ``x-api-key``, Azure's ``api-key``) and the standard
credential headers; :func:`is_secret_name` also catches names by the words in them."""

_SECRET_NAMES = CREDENTIAL_HEADERS | {"key", "sig", "signature", "auth", "x-auth"}
"""Exact names (lower case, ``_`` as ``-``) that hold a credential: as query parameters too
(``?key=`` for Gemini, ``?sig=`` for an Azure SAS URL)."""

_SECRET_WORDS = ("token", "secret", "passw", "api-key", "apikey", "private-key", "credential", "cookie")
"""Name parts that mark a credential: ``x-auth-token``, ``client_secret``, ``db_password`` ...
(``tokens`` counts things: ``max_tokens`` is no secret)."""


def is_secret_name(name: str) -> bool:
    """Whether a header, query parameter or mapping key named ``name`` holds a credential."""
    lowered = name.lower().replace("_", "-")
    if lowered in _SECRET_NAMES:
        return True
    lowered = lowered.replace("tokens", "")
    return any(word in lowered for word in _SECRET_WORDS)


def redact_mapping(values: Mapping[Any, Any]) -> dict[Any, Any]:
    """A copy of ``values`` (headers, ``extra_body``, a context) to show: the value of every secret
    key masked, nested mappings likewise, URLs in string values redacted (:func:`redact_text`)."""
    shown: dict[Any, Any] = {}
    for key, value in values.items():
        if isinstance(key, str) and is_secret_name(key):
            shown[key] = MASK
        elif isinstance(value, Mapping):
            shown[key] = redact_mapping(value)
        elif isinstance(value, str):
            shown[key] = redact_text(value)
        else:
            shown[key] = value
    return shown


def redact_url(url: str) -> str:
    """``url`` to show: its password and the values of its secret query parameters masked.

    Anything else is kept as written (the same string when nothing is secret). A URL given without
    a scheme (``user:pass@host``, a configuration mistake) is redacted all the same."""
    if "://" not in url:
        return _redacted_url("//" + url)[2:] if "@" in url else url
    return _redacted_url(url)


def _redacted_url(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable (a bad port, an unclosed IPv6 bracket): show no part of it
        return MASK
    netloc, query = parts.netloc, parts.query
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
    if query:
        query = "&".join(_redact_param(param) for param in query.split("&"))
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _redact_param(param: str) -> str:
    name, eq, _ = param.partition("=")
    return f"{name}={MASK}" if eq and is_secret_name(unquote_plus(name)) else param


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,:;)\]]")
"""A URL in running text, without the punctuation that may follow it."""


def redact_text(text: str) -> str:
    """``text`` (a message, a log line) with every URL in it redacted by :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda found: redact_url(found.group()), text)


class RedactingLogFilter(logging.Filter):
    """Redacts the records of a logger we do not own (httpx2 logs every request's full URL at
    INFO; an SDK logs its request options, headers included, at DEBUG): mappings among the
    arguments through :func:`redact_mapping`, URLs in the message through :func:`redact_text`."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, Mapping):
            record.args = redact_mapping(args)
        elif args:
            record.args = tuple(redact_mapping(a) if isinstance(a, Mapping) else a for a in args)
        try:
            message = record.getMessage()
        except Exception:
            return True
        shown = redact_text(message)
        if shown != message:
            record.msg, record.args = shown, ()
        return True


def install_log_redaction(*logger_names: str) -> None:
    """Put one :class:`RedactingLogFilter` on each named logger (once, however often called)."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingLogFilter) for f in logger.filters):
            logger.addFilter(RedactingLogFilter())
