"""A request's headers are put in place of the client's in one pass (``providers._http._put_headers``)
rather than through httpx2's merge: the request must carry exactly what the merge would give it."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

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
