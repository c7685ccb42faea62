"""Bedrock's error types, each to the error class and retry rule it stands for.

Bedrock names its error in the ``x-amzn-errortype`` header (or the body's ``__type``; inside a
stream, the ``:exception-type`` header), and that name says more than the HTTP status: a model that is
not ready yet is a 429 like a throttle but is an overload, a throttle's message may say "too many
tokens" (which the status table reads as a context-length error), and an input too long for the model
is a plain ``ValidationException``. Names not listed here are classed by their status.
"""

from __future__ import annotations

from typing import Any, NamedTuple

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
from providers._errors import ErrorDetails

__all__ = ["error_details"]


class _Kind(NamedTuple):
    error_class: type[ProviderError]
    retryable: bool | None = None
    """``None``: the class's own rule."""


_KINDS: dict[str, _Kind] = {
    "throttlingexception": _Kind(RateLimitError),
    "servicequotaexceededexception": _Kind(RateLimitError),  # "you can resubmit your request later"
    "serviceunavailableexception": _Kind(OverloadedError),
    "modelnotreadyexception": _Kind(OverloadedError),  # a 429; the AWS SDKs retry it
    "internalserverexception": _Kind(ServerError),
    "modelstreamerrorexception": _Kind(ServerError),  # "retry your request"
    "modeltimeoutexception": _Kind(APITimeoutError),
    "modelerrorexception": _Kind(ServerError, retryable=False),  # the model failed on this request
    "validationexception": _Kind(BadRequestError),
    "accessdeniedexception": _Kind(PermissionDeniedError),  # signed right, not allowed this model
    "unrecognizedclientexception": _Kind(AuthenticationError),
    "invalidsignatureexception": _Kind(AuthenticationError),
    "incompletesignatureexception": _Kind(AuthenticationError),
    "missingauthenticationtokenexception": _Kind(AuthenticationError),
    "expiredtokenexception": _Kind(AuthenticationError),
    "resourcenotfoundexception": _Kind(NotFoundError),
}

_CONTEXT_HINTS = (
    "input is too long",
    "prompt is too long",
    "too many input tokens",
    "too many tokens",
    "expected maxlength:",
    "context length",
    "context window",
)
"""How a ``ValidationException`` says the input does not fit the model (Claude, Nova, Llama, ...)."""


def error_details(body: Any) -> ErrorDetails | None:
    """Facts from Bedrock's error body, ``{"message": ...}``, with its type as ``__type``."""
    if not isinstance(body, dict):
        return None
    message = body.get("message") or body.get("Message")
    raw_kind = body.get("__type")
    kind = raw_kind.rpartition("#")[2] if isinstance(raw_kind, str) and raw_kind else None
    text = message if isinstance(message, str) and message else f"Bedrock API error{f' ({kind})' if kind else ''}"
    found = _KINDS.get(kind.lower()) if kind else None
    if found is None:
        return ErrorDetails(message=text, error_type=kind)
    error_class = found.error_class
    if error_class is BadRequestError and any(hint in text.lower() for hint in _CONTEXT_HINTS):
        error_class = ContextLengthExceededError
    return ErrorDetails(message=text, error_type=kind, retryable=found.retryable, error_class=error_class)
