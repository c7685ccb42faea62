"""AWS Signature Version 4 for Bedrock requests, by botocore's own signer (the optional extra
``bedrock``; imported when the first request is signed, never by importing the provider).

:class:`SigV4` is an ``httpx2.Auth``: each request (each attempt of a retry too, so its
``X-Amz-Date`` is fresh) is signed as it is sent, over its method, URL, ``host``,
``content-type`` and body. Credentials are the ones given, or botocore's default chain (environment,
shared config and profiles, SSO, container and instance roles), resolved once and refreshed by
botocore when they are temporary. The headers it adds (``Authorization``, ``X-Amz-Date``,
``X-Amz-Security-Token``) are credential-bearing names that every repr of our request headers masks.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Any

import httpx2

from chatclient.errors import ConfigurationError

__all__ = ["SERVICE", "SigV4"]

SERVICE = "bedrock"
"""The signing name of Bedrock Runtime (its host is ``bedrock-runtime.<region>.amazonaws.com``)."""

_SIGNED = ("authorization", "x-amz-date", "x-amz-security-token")


def _botocore() -> Any:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        import botocore.session
    except ImportError as exc:  # pragma: no cover - the extra is in dev
        raise ConfigurationError(
            "Bedrock requests are signed with botocore: pip install 'chatclient[bedrock]'"
        ) from exc
    return botocore


class SigV4(httpx2.Auth):
    """Signs each request for ``region`` with the given keys, or with botocore's default chain."""

    requires_request_body = True

    def __init__(
        self,
        region: str,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        profile: str | None = None,
    ) -> None:
        if (access_key is None) != (secret_key is None):
            raise ConfigurationError("Bedrock: give both aws_access_key_id and aws_secret_access_key, or neither")
        self.region = region
        self._keys = (access_key, secret_key, session_token)
        self._profile = profile
        self._credentials: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SigV4(region={self.region!r})"

    def _resolve(self) -> Any:
        """The credentials object, built once (the default chain reads files and may call out)."""
        if self._credentials is None:
            with self._lock:
                if self._credentials is None:
                    botocore = _botocore()
                    access_key, secret_key, token = self._keys
                    if access_key is not None:
                        self._credentials = botocore.credentials.Credentials(access_key, secret_key, token)
                    else:
                        found = botocore.session.Session(profile=self._profile).get_credentials()
                        if found is None:
                            raise ConfigurationError(
                                "Bedrock: no AWS credentials found (pass aws_access_key_id and "
                                "aws_secret_access_key, or set up the AWS environment, config or profile)"
                            )
                        self._credentials = found
        return self._credentials

    def sign(self, request: httpx2.Request) -> None:
        """Add the signature headers to ``request`` (its body must be read)."""
        botocore = _botocore()
        frozen = self._resolve().get_frozen_credentials()
        credentials = botocore.credentials.Credentials(frozen.access_key, frozen.secret_key, frozen.token)
        headers = {"content-type": request.headers.get("content-type", "application/json")}
        aws = botocore.awsrequest.AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        botocore.auth.SigV4Auth(credentials, SERVICE, self.region).add_auth(aws)
        for name in _SIGNED:
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        self.sign(request)
        yield request
