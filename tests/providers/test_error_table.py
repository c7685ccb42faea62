"""One table classes every provider error: an HTTP status, and an error event inside a 200 stream.

The same fault reported either way (a rate limit as a 429, or as a ``rate_limit_error`` event after
the stream started) is one error class with one retry rule, on every provider.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from chatclient.errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthExceededError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from providers._errors import EVENT_ERROR_STATUS, ErrorDetails, error_from_event, error_from_response
from providers.anthropic import _mapping as anthropic_mapping
from providers.ollama import _mapping as ollama_mapping
from providers.openai import _mapping as openai_mapping
from providers.openai_responses import _mapping as responses_mapping

EVENTS: dict[str, Callable[[str, str], ProviderError]] = {
    "openai": lambda kind, message: openai_mapping.stream_error({"error": {"type": kind, "message": message}}),
    "responses": lambda kind, message: responses_mapping.event_error({"code": kind, "message": message}),
    "anthropic": lambda kind, message: anthropic_mapping.stream_error(
        {"type": "error", "error": {"type": kind, "message": message}}
    ),
    "ollama": lambda kind, message: ollama_mapping.stream_error({"error": {"type": kind, "message": message}}),
}


@pytest.mark.parametrize("provider", sorted(EVENTS))
@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("rate_limit_error", RateLimitError),
        ("rate_limit_exceeded", RateLimitError),
        ("overloaded_error", OverloadedError),
        ("authentication_error", AuthenticationError),
        ("invalid_request_error", BadRequestError),
        ("context_length_exceeded", ContextLengthExceededError),
        ("server_error", ServerError),
    ],
)
def test_an_error_event_is_classed_like_the_http_status_it_stands_for(
    provider: str, kind: str, expected: type[ProviderError]
) -> None:
    from_event = EVENTS[provider](kind, "it failed")
    status = EVENT_ERROR_STATUS[kind]
    body = b'{"error": {"type": "%s", "message": "it failed"}}' % kind.encode()
    from_status = error_from_response("p", status, httpx2.Headers(), body, openai_mapping.error_details)
    assert type(from_event) is expected is type(from_status)
    assert from_event.retryable == from_status.retryable, "one retry rule for both"
    assert "it failed" in str(from_event)


def test_the_status_an_event_carries_wins_and_is_reported() -> None:
    def details(body: Any) -> ErrorDetails:
        return ErrorDetails("model 'x' not found")

    error = error_from_event("p", {"error": "model 'x' not found"}, details, status=404)
    assert error.status == 404 and type(error).__name__ == "NotFoundError"
    inferred = error_from_event("p", {"error": {"type": "rate_limit_error"}}, openai_mapping.error_details)
    assert isinstance(inferred, RateLimitError) and inferred.status is None, "no HTTP status was sent"


def test_an_unknown_event_is_a_server_error_unless_the_provider_says_otherwise() -> None:
    body = {"error": {"type": "brand_new", "message": "?"}}
    assert type(error_from_event("p", body, openai_mapping.error_details)) is ServerError
    unknown = error_from_event("p", body, openai_mapping.error_details, unknown=ProviderError)
    assert type(unknown) is ProviderError and unknown.error_type == "brand_new"
