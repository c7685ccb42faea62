"""Credentials in request headers: held as :class:`Secret`, masked in every repr, and put into a
request without ever being shown (``chatclient._redact`` is the one masking rule)."""

from __future__ import annotations

import httpx2

from chatclient._redact import CREDENTIAL_HEADERS, MASK, is_secret_name

__all__ = ["PreparedHeaders", "RedactedHeaders", "Secret", "mask_credentials", "put_headers"]


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


def mask_credentials(headers: httpx2.Headers, secret_names: frozenset[str]) -> None:
    """Make the request's own (just built) ``headers`` a :class:`RedactedHeaders` in place: the same
    object, the same values, the masking repr, without copying them once more per request."""
    headers.__class__ = RedactedHeaders
    headers._secret_names = secret_names  # type: ignore[attr-defined]


class PreparedHeaders:
    """Holds request headers that include revealed credentials, without ever showing them.

    ``keys``: their lower-case names, for :func:`put_headers`; ``None`` when one of them is a
    header httpx2 sets while it builds a request (``host``, ``content-length``, ``transfer-encoding``),
    or when this httpx2's ``Headers`` is not of the shape :func:`put_headers` writes: those go through
    httpx2's own merge."""

    __slots__ = ("headers", "keys")

    def __init__(self, headers: httpx2.Headers) -> None:
        self.headers = headers
        keys = frozenset(lower for _, lower, _ in headers._list) if HEADERS_SHAPE_KNOWN else _BUILT_HEADERS
        self.keys = None if keys & _BUILT_HEADERS else keys

    def __repr__(self) -> str:
        return "PreparedHeaders(***)"


_BUILT_HEADERS = frozenset((b"host", b"content-length", b"transfer-encoding"))

HTTPX2_SHAPE_CHECKED = "2.17"
"""The httpx2 release whose private ``Headers._list``/``_encoding`` :func:`put_headers` writes, checked
by ``tests/providers/test_request_headers.py`` (which fails on a release whose shape differs)."""


def _headers_shape_known() -> bool:
    probe = httpx2.Headers({"A": "b"})
    return getattr(probe, "_list", None) == [(b"A", b"a", b"b")] and hasattr(probe, "_encoding")


HEADERS_SHAPE_KNOWN = _headers_shape_known()
"""Whether this httpx2 keeps headers as :func:`put_headers` expects; if not, every request takes
httpx2's own merge (correct, and slower)."""


def put_headers(headers: httpx2.Headers, prepared: PreparedHeaders, keys: frozenset[bytes]) -> None:
    """Put the prepared headers into a just built request's ``headers``, each replacing the client's
    header of that name: what httpx2's merge does (``Headers.update``: a pop per name the client
    has, then an extend), in one pass. It writes httpx2's private ``Headers._list``, which is why
    it is pinned to a checked release; the reason it stays (httpx2's merge costs S1 about 12 %) is in
    ``benchmarks/results/2026-12-06-speed-notes.md``."""
    entries = headers._list
    entries[:] = [entry for entry in entries if entry[1] not in keys]
    entries.extend(prepared.headers._list)
    headers._encoding = None  # worked out again from the values, as for a new Headers
