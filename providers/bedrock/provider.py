"""``BedrockProvider``: AWS Bedrock Runtime in one region, its requests signed with SigV4 (or sent
with a Bedrock API key as a Bearer token)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx2

from chatclient.errors import ConfigurationError
from providers._provider import Provider

__all__ = ["BedrockProvider", "endpoint_for"]


def endpoint_for(region: str) -> str:
    """Bedrock Runtime's endpoint in ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProvider(Provider):
    """AWS Bedrock Runtime.

    ``region`` defaults to ``$AWS_REGION``, then ``$AWS_DEFAULT_REGION``; ``base_url`` to
    ``$AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, then the region's endpoint. ``api_key`` (or
    ``$AWS_BEARER_TOKEN_BEDROCK``), a Bedrock API key, is sent as a Bearer token; without one each
    request is signed with SigV4 (botocore's signer, the extra ``bedrock``) with the given
    ``aws_access_key_id``/``aws_secret_access_key``/``aws_session_token`` or, without them,
    botocore's default chain (environment, shared config and ``aws_profile``, SSO, roles).
    """

    vendor = "AWS Bedrock"
    key_env = "AWS_BEARER_TOKEN_BEDROCK"
    base_url_env = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
    takes_sdk_client = False

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        region: str | None = None,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
        aws_profile: str | None = None,
        **settings: Any,
    ) -> None:
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region is None:
            raise ConfigurationError("BedrockProvider: pass region= or set AWS_REGION")
        self.region = region
        if base_url is None and not os.environ.get(self.base_url_env or ""):
            base_url = endpoint_for(region)
        self._signing = (aws_access_key_id, aws_secret_access_key, aws_session_token, aws_profile)
        super().__init__(api_key, base_url, **settings)
        if aws_access_key_id is not None and self.secret_headers:
            raise ConfigurationError("BedrockProvider: pass an api_key or AWS keys, not both")

    def describe(self) -> str:
        return f"region={self.region!r}, {super().describe()}"

    def request_signer(self) -> Callable[[httpx2.Request], None] | None:
        """SigV4, unless a Bedrock API key is sent (or the application's client authenticates)."""
        if self.secret_headers or any(
            client is not None and client.auth is not None for client in (self.http_client, self.async_http_client)
        ):
            return None
        from ._signing import SigV4  # botocore itself is imported by the first signature

        access, secret, token, profile = self._signing
        signer = SigV4(self.region, access_key=access, secret_key=secret, session_token=token, profile=profile)
        return signer.sign
