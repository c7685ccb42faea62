"""Bedrock requests are signed with AWS Signature Version 4 (botocore's signer), checked as AWS
checks it: the canonical request is rebuilt from the request as httpx2 sends it, and the signature
recomputed with the secret key by the spec's HMAC chain, here, independently of botocore."""

from __future__ import annotations

import hashlib
import hmac
import sys
from urllib.parse import quote

import httpx2
import pytest

from chatclient.errors import ConfigurationError
from providers._secrets import RedactedHeaders

pytest.importorskip("botocore")

from providers.bedrock._signing import SERVICE, SigV4

ACCESS, SECRET, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-example"
URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse"


def _sent(auth: SigV4, body: bytes = b'{"messages":[]}') -> httpx2.Request:
    """The request as the client sends it, after the auth flow ran."""
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={})

    with httpx2.Client(transport=httpx2.MockTransport(handler), auth=auth) as client:
        client.post(URL, content=body, headers={"content-type": "application/json", "accept": "application/json"})
    return seen[0]


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _verify(request: httpx2.Request, secret: str, region: str) -> None:
    """What AWS does with a signed request (the SigV4 spec's steps), or an AssertionError."""
    algorithm, _, fields = request.headers["authorization"].partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    parts = dict(part.strip().split("=", 1) for part in fields.split(","))
    access, date, scope_region, service, terminator = parts["Credential"].split("/")
    assert (access, scope_region, service, terminator) == (ACCESS, region, SERVICE, "aws4_request")
    signed = parts["SignedHeaders"].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(signed)
    stamp = request.headers["x-amz-date"]
    path = quote(request.url.raw_path.decode().split("?")[0], safe="/-_.~")
    canonical = "\n".join(
        [
            request.method,
            path,
            "",
            "".join(f"{name}:{request.headers[name].strip()}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(request.content).hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), date), region), SERVICE), "aws4_request")
    assert hmac.compare_digest(parts["Signature"], hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest())


def test_a_request_is_signed_as_aws_verifies_it() -> None:
    request = _sent(SigV4("us-east-1", access_key=ACCESS, secret_key=SECRET))
    _verify(request, SECRET, "us-east-1")
    assert "x-amz-security-token" not in request.headers


def test_a_changed_body_or_another_secret_fails_the_check() -> None:
    """The check above can fail: the signature covers the body, and only the secret makes it."""
    request = _sent(SigV4("us-east-1", access_key=ACCESS, secret_key=SECRET))
    with pytest.raises(AssertionError):
        _verify(request, "another-secret", "us-east-1")
    tampered = httpx2.Request(request.method, request.url, headers=request.headers, content=b'{"messages":[1]}')
    with pytest.raises(AssertionError):
        _verify(tampered, SECRET, "us-east-1")


def test_temporary_credentials_send_their_session_token() -> None:
    request = _sent(SigV4("eu-west-3", access_key=ACCESS, secret_key=SECRET, session_token=TOKEN))
    _verify(request, SECRET, "eu-west-3")
    assert request.headers["x-amz-security-token"] == TOKEN
    assert "x-amz-security-token" in request.headers["authorization"], "the token is signed too"


def test_the_default_chain_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    _verify(_sent(SigV4("us-west-2")), SECRET, "us-west-2")


def test_no_credentials_anywhere_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no call to an instance role's endpoint
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    with pytest.raises(ConfigurationError, match="no AWS credentials found"):
        _sent(SigV4("us-east-1"))


def test_half_a_key_pair_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="both"):
        SigV4("us-east-1", access_key=ACCESS)


def test_the_signature_headers_are_masked_in_our_request_headers() -> None:
    request = _sent(SigV4("us-east-1", access_key=ACCESS, secret_key=SECRET, session_token=TOKEN))
    shown = repr(RedactedHeaders(request.headers)) + repr(SigV4("us-east-1", access_key=ACCESS, secret_key=SECRET))
    assert TOKEN not in shown and request.headers["authorization"] not in shown and SECRET not in shown


def test_botocore_is_loaded_by_the_first_signature_not_by_the_import() -> None:
    import subprocess

    code = "import providers.bedrock._signing, sys; assert 'botocore' not in sys.modules, 'loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)
