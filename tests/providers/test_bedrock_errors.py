"""Bedrock's errors by their type (``x-amzn-errortype``, the body's ``__type``, a stream's
``:exception-type``), not by the status alone: the class and the retry rule each type stands for,
against the shapes AWS documents (the recordings hold one error, a 400 without the header, checked in
test_bedrock_replies), and the tenacity policy retrying exactly the retryable ones."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from chatclient import ChatClient
from chatclient.errors import (
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextLengthExceededError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from providers._errors import error_from_response
from providers._retry import RetryPolicy
from providers.bedrock import BedrockChatModel
from providers.bedrock._errors import error_details
from providers.bedrock._eventstream import EventMessage
from providers.bedrock._mapping import PROVIDER
from providers.bedrock._stream_parser import StreamParser

pytest.importorskip("botocore")

SHAPES: list[tuple[int, str, str, type[ProviderError], bool]] = [
    (429, "ThrottlingException", "Too many tokens, please wait before trying again.", RateLimitError, True),
    (429, "ThrottlingException", "Too many requests, please wait before trying again.", RateLimitError, True),
    (400, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account.",
     RateLimitError, True),
    (503, "ServiceUnavailableException", "Bedrock is unable to process your request.", OverloadedError, True),
    (429, "ModelNotReadyException", "Model is not ready for inference. Wait and try your request again.",
     OverloadedError, True),
    (500, "InternalServerException", "The server encountered an error processing your request.", ServerError, True),
    (408, "ModelTimeoutException", "Model has timed out in processing the request.", APITimeoutError, True),
    (424, "ModelErrorException", "The model encountered an error processing the request.", ServerError, False),
    (400, "ValidationException", "Input is too long for requested model.", ContextLengthExceededError, False),
    (400, "ValidationException", "prompt is too long: 208310 tokens > 200000 maximum",
     ContextLengthExceededError, False),
    (400, "ValidationException", "The provided model identifier is invalid.", BadRequestError, False),
    (403, "AccessDeniedException", "You don't have access to the model with the specified model ID.",
     PermissionDeniedError, False),
    (403, "UnrecognizedClientException", "The security token included in the request is invalid.",
     AuthenticationError, False),
    (403, "InvalidSignatureException", "The request signature we calculated does not match the signature you "
     "provided.", AuthenticationError, False),
    (403, "ExpiredTokenException", "The security token included in the request is expired", AuthenticationError,
     False),
    (404, "ResourceNotFoundException", "Model not found.", NotFoundError, False),
]  # fmt: skip
"""(status, type, message as AWS words it, our class, retryable)."""

REQUEST_ID = "b3f4c2d1-0000-4000-8000-000000000000"


def _error(status: int, headers: dict[str, str], body: Any) -> ProviderError:
    raw = json.dumps(body).encode() if body is not None else b""
    return error_from_response(PROVIDER, status, httpx2.Headers(headers), raw, error_details)


@pytest.mark.parametrize(("status", "kind", "message", "expected", "retryable"), SHAPES)
def test_the_header_type_classes_the_error(
    status: int, kind: str, message: str, expected: type[ProviderError], retryable: bool
) -> None:
    headers = {"x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
               "x-amzn-requestid": REQUEST_ID}  # fmt: skip
    error = _error(status, headers, {"message": message})
    assert type(error) is expected
    assert (error.retryable, error.error_type, error.status, error.message) == (retryable, kind, status, message)
    assert error.request_id == REQUEST_ID


@pytest.mark.parametrize(("status", "kind", "message", "expected", "retryable"), SHAPES)
def test_the_body_type_classes_the_error_too(
    status: int, kind: str, message: str, expected: type[ProviderError], retryable: bool
) -> None:
    error = _error(status, {}, {"__type": f"com.amazon.coral.service#{kind}", "message": message})
    assert (type(error), error.retryable, error.error_type) == (expected, retryable, kind)


@pytest.mark.parametrize(("status", "kind", "message", "expected", "retryable"), SHAPES)
def test_a_stream_exception_is_the_same_error(
    status: int, kind: str, message: str, expected: type[ProviderError], retryable: bool
) -> None:
    exception = kind[0].lower() + kind[1:]  # inside a stream the type starts lower case
    payload = json.dumps({"message": message}).encode()
    with pytest.raises(ProviderError) as caught:
        StreamParser(REQUEST_ID).feed(
            EventMessage({":message-type": "exception", ":exception-type": exception}, payload)
        )
    assert (type(caught.value), caught.value.retryable, caught.value.message) == (expected, retryable, message)


def test_a_type_without_a_body_still_says_what_it_is() -> None:
    error = _error(503, {"x-amzn-errortype": "ServiceUnavailableException"}, None)
    assert isinstance(error, OverloadedError) and error.retryable
    assert "ServiceUnavailableException" in error.message


def test_an_unknown_type_is_classed_by_its_status() -> None:
    error = _error(409, {"x-amzn-errortype": "ConflictException"}, {"message": "busy"})
    assert (type(error), error.error_type) == (BadRequestError, "ConflictException")
    assert type(_error(502, {"x-amzn-errortype": "SomethingNew"}, {"message": "x"})) is ServerError


class Flaky:
    """Answers each request with the next reply of ``replies``."""

    def __init__(self, *replies: httpx2.Response) -> None:
        self.replies, self.requests = list(replies), 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests += 1
        return self.replies.pop(0)

    def model(self) -> BedrockChatModel:
        transport = httpx2.MockTransport(self)
        return BedrockChatModel(
            "us.amazon.nova-micro-v1:0", region="us-east-1", aws_access_key_id="AKIDEXAMPLE",
            aws_secret_access_key="s", http_client=httpx2.Client(transport=transport),
            async_http_client=httpx2.AsyncClient(transport=transport),
            retry=RetryPolicy(max_retries=2, initial_backoff=0, max_backoff=0),
        )  # fmt: skip


def _failure(status: int, kind: str, message: str) -> httpx2.Response:
    return httpx2.Response(status, headers={"x-amzn-errortype": kind}, json={"message": message})


OK = httpx2.Response(200, json={"output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
                                "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}})  # fmt: skip


def test_a_model_not_ready_is_retried_and_then_answers() -> None:
    flaky = Flaky(_failure(429, "ModelNotReadyException", "Model is not ready for inference."), OK)
    assert ChatClient.create(flaky.model()).prompt("Hi").call().content() == "Hi."
    assert flaky.requests == 2


def test_a_throttle_saying_too_many_tokens_is_retried_not_a_context_error() -> None:
    flaky = Flaky(_failure(429, "ThrottlingException", "Too many tokens, please wait before trying again."), OK)
    assert ChatClient.create(flaky.model()).prompt("Hi").call().content() == "Hi."
    assert flaky.requests == 2


@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [("ValidationException", 400, ContextLengthExceededError), ("ModelErrorException", 424, ServerError),
     ("AccessDeniedException", 403, PermissionDeniedError)],
)  # fmt: skip
def test_a_final_error_is_sent_once(kind: str, status: int, expected: type[ProviderError]) -> None:
    flaky = Flaky(_failure(status, kind, "Input is too long for requested model."), OK)
    with pytest.raises(expected):
        ChatClient.create(flaky.model()).prompt("Hi").call().content()
    assert flaky.requests == 1
