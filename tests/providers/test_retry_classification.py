"""Which 5xx replies are retried: all of them, unless the body says the request itself is invalid."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from chatclient.errors import ServerError
from providers._errors import error_from_response
from providers.openai._mapping import error_details

from .local_server import TEMPLATE_ERROR


@pytest.mark.parametrize(
    ("status", "body", "headers", "retryable"),
    [
        (500, TEMPLATE_ERROR, {}, False),
        (
            500,
            {"error": {"message": "Jinja: expected token 'end of print statement'", "type": "server_error"}},
            {},
            False,
        ),
        (500, {"error": {"message": "Failed to apply chat template", "code": None}}, {}, False),
        (500, {"object": "error", "message": "1 validation error for ChatCompletionRequest", "code": 500}, {}, False),
        (502, {"error": {"message": "upstream failed", "type": "invalid_request_error"}}, {}, False),
        (
            500,
            {"error": {"message": "The server had an error processing your request.", "type": "server_error"}},
            {},
            True,
        ),
        (503, {"error": {"message": "Model is loading", "type": "unavailable_error"}}, {}, True),
        (500, None, {}, True),
        (500, TEMPLATE_ERROR, {"x-should-retry": "true"}, True),
    ],
    ids=[
        "llama.cpp",
        "jinja",
        "chat-template",
        "vllm-validation",
        "invalid-type",
        "plain-500",
        "loading",
        "no-body",
        "header-wins",
    ],
)
def test_a_5xx_is_retried_unless_its_body_says_the_request_is_invalid(
    status: int, body: Any, headers: dict[str, str], retryable: bool
) -> None:
    content = json.dumps(body).encode() if body is not None else b""
    error = error_from_response("openai", status, httpx2.Headers(headers), content, error_details)
    assert isinstance(error, ServerError) and error.status == status
    assert error.retryable is retryable
