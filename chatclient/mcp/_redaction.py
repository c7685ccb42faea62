"""What an MCP connection's repr and the log lines of its HTTP traffic show of its credentials: nothing.

A stop-gap local to MCP: the shared helper (``chatclient._redact``, on its way from another branch)
is not importable here yet; once it is, ``shown_headers``/``shown_url``/``RedactingUrls`` become its
``redact_mapping``/``redact_url``/``install_log_redaction`` and this module goes. The names judged
secret follow its rule.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["MASK", "RedactingUrls", "shown_env", "shown_headers", "shown_url"]

MASK = "[secure]"
_SECRET_NAMES = frozenset(
    {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie", "set-cookie"}
    | {"key", "sig", "signature", "auth", "x-auth"}
)
_SECRET_WORDS = ("token", "secret", "passw", "api-key", "apikey", "private-key", "credential", "cookie")


def _is_secret_name(name: str) -> bool:
    lowered = name.lower().replace("_", "-")
    if lowered in _SECRET_NAMES:
        return True
    lowered = lowered.replace("tokens", "")
    return any(word in lowered for word in _SECRET_WORDS)


def shown_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with the value of every credential-looking header masked."""
    return {name: MASK if _is_secret_name(name) else value for name, value in headers.items()}


def shown_env(env: Mapping[str, str]) -> dict[str, str]:
    """Every value masked: a child's environment is where its secrets are passed, whatever their names."""
    return dict.fromkeys(env, MASK)


def shown_url(url: str) -> str:
    """``url`` with its password and the values of credential-looking query parameters masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}" if at and ":" in userinfo else parts.netloc
    query = "&".join(
        f"{name}={MASK}" if eq and _is_secret_name(unquote_plus(name)) else f"{name}{eq}{value}"
        for name, eq, value in (param.partition("=") for param in parts.query.split("&"))
    )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]*[^\s'\"<>`.,:;)\]]")


class RedactingUrls(logging.Filter):
    """Masks credentials in the URLs of a record's message: the SDK logs the endpoint it connects to
    (at DEBUG) and httpx2 every request's URL (at INFO), a token in the query string included."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if "://" in message:
            shown = _URL.sub(lambda found: shown_url(found.group()), message)
            if shown != message:
                record.msg, record.args = shown, ()
        return True

    @classmethod
    def install(cls, *logger_names: str) -> None:
        """One filter on each named logger (a filter applies to its own logger's records only)."""
        for name in logger_names:
            logger = logging.getLogger(name)
            if not any(isinstance(f, cls) for f in logger.filters):
                logger.addFilter(cls())
