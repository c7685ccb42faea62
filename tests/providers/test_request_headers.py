"""A request's headers are put in place of the client's in one pass (``providers._secrets.put_headers``)
rather than through httpx2's merge: the request must carry exactly what the merge would give it.
That writes httpx2's private ``Headers._list``, so the httpx2 release it was checked on is pinned here."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from providers import _secrets
from providers._secrets import RedactedHeaders, Secret
from providers._transport import ProviderHttp


def _http(client: httpx2.Client, headers: dict[str, str], secrets: dict[str, Secret] | None = None) -> ProviderHttp:
    return ProviderHttp(provider="p", base_url="https://api.example.com/v1", headers=headers,
                        secret_headers=secrets, error_details=lambda body: None, http_client=client)  # fmt: skip


def _merged(client: httpx2.Client, http: ProviderHttp, extra: dict[str, str] | None = None) -> httpx2.Request:
    """The request httpx2's own merge builds from the same headers."""
    headers = httpx2.Headers(http._request_headers())
    if extra:
        headers.update(extra)
    return client.build_request("POST", "https://api.example.com/v1/chat", content=b'{"a":1}', headers=headers)


def _as_set(headers: httpx2.Headers) -> list[tuple[bytes, bytes]]:
    return sorted((key.lower(), value) for key, value in headers.raw)


CLIENTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "own user agent": {"headers": {"User-Agent": "app/1", "X-Team": "a"}},
    "cookies": {"cookies": {"session": "s"}},
}


@pytest.mark.parametrize("client_args", CLIENTS.values(), ids=list(CLIENTS))
@pytest.mark.parametrize(
    "headers",
    [{"accept": "application/json"}, {"Accept": "text/event-stream", "X-Extra": "on"}, {}],
)
def test_the_request_carries_what_httpx2s_merge_gives(client_args: dict[str, Any], headers: dict[str, str]) -> None:
    client = httpx2.Client(**client_args)
    http = _http(client, headers, {"authorization": Secret("Bearer sk-1")})
    built = http._build(client, "/chat", {"a": 1}, None)
    expected = _merged(client, http)
    assert _as_set(built.headers) == _as_set(expected.headers)
    assert type(built.headers) is RedactedHeaders and "sk-1" not in repr(built.headers)
    for name in ("user-agent", "accept", "content-type", "content-length", "host", "authorization"):
        assert built.headers.get(name) == expected.headers.get(name)
    assert built.headers.get_list("x-extra") == expected.headers.get_list("x-extra")
    assert client.headers == httpx2.Client(**client_args).headers  # the client's own are left alone


def test_a_requests_own_headers_and_a_host_header_still_go_through_httpx2s_merge() -> None:
    client = httpx2.Client()
    http = _http(client, {"accept": "application/json"})
    built = http._build(client, "/chat", {"a": 1}, {"accept": "text/plain", "x-request": "1"})
    assert _as_set(built.headers) == _as_set(_merged(client, http, {"accept": "text/plain", "x-request": "1"}).headers)
    hosted = _http(client, {"Host": "proxy.example"})
    assert hosted._build(client, "/chat", {"a": 1}, None).headers["host"] == "proxy.example"
    assert _as_set(hosted._build(client, "/chat", {"a": 1}, None).headers) == _as_set(_merged(client, hosted).headers)


def test_put_headers_writes_only_the_headers_shape_it_was_checked_on() -> None:
    """Fails on an httpx2 whose ``Headers`` no longer keeps ``(raw, lower, value)`` triples in
    ``_list`` and an ``_encoding``: re-check the shape, then move :data:`HTTPX2_SHAPE_CHECKED`. (A
    release whose shape is unchanged passes; on any other shape the requests take httpx2's own merge,
    tested below, so a new release never breaks a user, only this test.)"""
    headers = httpx2.Headers({"Accept": "x", "X-Key": "v"})
    assert headers._list == [(b"Accept", b"accept", b"x"), (b"X-Key", b"x-key", b"v")], (
        f"providers._secrets.put_headers writes httpx2.Headers._list, checked on httpx2 "
        f"{_secrets.HTTPX2_SHAPE_CHECKED}; this is {httpx2.__version__}: re-check the shape"
    )
    assert isinstance(headers._encoding, str | None)
    assert _secrets.HEADERS_SHAPE_KNOWN


def test_on_an_unknown_headers_shape_every_request_takes_httpx2s_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_secrets, "HEADERS_SHAPE_KNOWN", False)
    monkeypatch.setattr("providers._transport.put_headers", None)  # would raise if it were called
    client = httpx2.Client()
    http = _http(client, {"accept": "application/json"}, {"authorization": Secret("Bearer sk-1")})
    assert http._prepared().keys is None
    built = http._build(client, "/chat", {"a": 1}, None)
    assert _as_set(built.headers) == _as_set(_merged(client, http).headers)
