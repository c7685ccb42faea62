"""The errors chatclient raises, in one tree.

::

    ChatClientError
    ├── ConfigurationError (ValueError)      misuse found while building a request or a chain
    │   └── DuplicateToolNameError           two tools with one name in one request
    ├── AdvisorChainError                    an advisor cannot serve the requested mode
    ├── StructuredOutputError                ``entity()`` could not parse the model's reply
    ├── ScriptExhaustedError                 a ScriptedChatModel ran out of replies (tests)
    ├── UnknownModelPriceError (LookupError) a price table has no price for a reply's model
    ├── ProviderError                        a provider call failed (status, type, request id)
    │   ├── AuthenticationError              401: bad or missing API key
    │   ├── PermissionDeniedError            403
    │   ├── NotFoundError                    404: unknown model or endpoint
    │   ├── BadRequestError                  400/422: the request was rejected
    │   │   └── ContextLengthExceededError   the prompt does not fit the model's context
    │   ├── RateLimitError                   429, with ``retry_after`` when the provider says
    │   ├── ServerError                      5xx
    │   │   └── OverloadedError              529 / 503 overloaded
    │   ├── APIConnectionError               the connection failed
    │   │   └── APITimeoutError              the request timed out
    │   │       └── DeadlineExceeded         the request's deadline passed (attempts and waits together)
    │   └── MalformedResponseError           the reply could not be understood
    │       └── StreamIncompleteError        a stream ended before its terminal event
    ├── ToolCallConfirmationRequired         a reply holds calls a person must allow (a pause, not a failure)
    ├── ToolCallDecisionError (ValueError)   decisions that do not fit the paused reply; nothing ran
    ├── PendingStateError                    a paused state that cannot be resumed; nothing ran
    │   ├── PendingStateNotFoundError        unknown id, or already resumed (single use)
    │   ├── PendingStateExpiredError         past its expiry
    │   ├── PendingStateTamperedError        altered, or its seal does not verify
    │   └── PendingStateReusedError          this state was already resumed once (single use)
    └── ToolError                            failures around tool execution
        ├── ToolArgumentsError               malformed JSON or arguments failing validation
        ├── UnknownToolError                 the model called a tool that is not registered
        ├── ToolExecutionError               the tool itself raised (``__cause__`` is the original)
        └── ToolCallLimitExceededError       a per-turn limit was hit under the RAISE policy

By default the tool loop turns ``ToolArgumentsError``, ``UnknownToolError`` and
``ToolExecutionError`` into a message for the model instead of raising (see
:class:`chatclient.tools.ToolCallingManager`).
"""

from __future__ import annotations

from typing import Any

from ._redact import redact_text

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AdvisorChainError",
    "AuthenticationError",
    "BadRequestError",
    "ChatClientError",
    "ContextLengthExceededError",
    "ConfigurationError",
    "DeadlineExceeded",
    "DuplicateToolNameError",
    "MalformedResponseError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "PendingStateError",
    "PendingStateExpiredError",
    "PendingStateNotFoundError",
    "PendingStateReusedError",
    "PendingStateTamperedError",
    "ProviderError",
    "RateLimitError",
    "ScriptExhaustedError",
    "ServerError",
    "StreamIncompleteError",
    "StructuredOutputError",
    "ToolArgumentsError",
    "ToolCallDecisionError",
    "ToolCallLimitExceededError",
    "ToolCallUnauthorizedError",
    "ToolError",
    "ToolExecutionError",
    "TurnInProgressError",
    "TurnInterruptedError",
    "UsageLimitExceededError",
    "UnknownToolError",
    "UnknownModelPriceError",
    "PendingConversationMismatchError",
    "PendingStoreError",
]


class ChatClientError(Exception):
    """Base of every error raised by chatclient."""

    continuation: Any = None
    """Set when this error stopped a turn that can be finished without running anything again (a
    model round failed after tools ran, a usage limit was reached): a
    :class:`~chatclient.durable.TurnContinuation`; finish the turn with
    ``client.prompt().continue_turn(err.continuation)``."""


class ConfigurationError(ChatClientError, ValueError):
    """The request, client or chain is configured in a way that cannot work.

    A URL in the message shows no password or key (it often quotes a ``base_url``)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))


class DuplicateToolNameError(ConfigurationError):
    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(
            f"Multiple tools with the same name ({', '.join(names)}) in one request; tool names must be unique"
        )


class AdvisorChainError(ChatClientError):
    """An advisor in the chain does not implement the mode (call/stream, sync/async) being run."""


class StructuredOutputError(ChatClientError):
    """The reply could not be converted to the requested type; ``text`` keeps the raw reply."""

    def __init__(self, message: str, text: str | None) -> None:
        self.text = text
        self.attempts = 1  # how many replies were asked for (``entity(T, retries=N)``)
        super().__init__(message)


class ScriptExhaustedError(ChatClientError):
    """A scripted test model was asked for more replies than it was given."""


class ProviderError(ChatClientError):
    """A call to a model provider failed.

    ``status`` is the HTTP status (``None`` for connection failures and malformed replies),
    ``error_type`` the provider's own error type or code, ``request_id`` the provider's request id
    for support tickets, ``retry_after`` the seconds the provider asked to wait. ``retryable``
    says whether sending the same request again may succeed. Messages never contain credentials:
    a URL in one (a transport's error quoting the request or a proxy) shows no password or key.
    """

    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        body: object = None,
    ) -> None:
        self.message = message = redact_text(message)
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.request_id = request_id
        self.retry_after = retry_after
        self.retryable = self.default_retryable if retryable is None else retryable
        self.body = body
        super().__init__(message)

    def __str__(self) -> str:
        facts = [f for f in (self.provider, str(self.status) if self.status else None, self.error_type) if f]
        prefix = f"[{' '.join(facts)}] " if facts else ""
        suffix = f" (request id {self.request_id})" if self.request_id else ""
        return f"{prefix}{self.message}{suffix}"

    def __reduce__(self) -> tuple[object, ...]:
        return _rebuild, (type(self), self.message, self.__dict__)


def _rebuild(cls: type[ProviderError], message: str, state: dict[str, object]) -> ProviderError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class AuthenticationError(ProviderError):
    """401: the API key is missing, wrong or revoked."""


class PermissionDeniedError(ProviderError):
    """403: the key may not use this model or endpoint."""


class NotFoundError(ProviderError):
    """404: the model or endpoint does not exist."""


class BadRequestError(ProviderError):
    """400/422: the provider rejected the request as invalid."""


class ContextLengthExceededError(BadRequestError):
    """The prompt (plus the requested output) does not fit the model's context window."""


class RateLimitError(ProviderError):
    """429: too many requests or tokens; ``retry_after`` says how long to wait when known."""

    default_retryable = True


class ServerError(ProviderError):
    """5xx: the provider failed."""

    default_retryable = True


class OverloadedError(ServerError):
    """529/503: the provider is overloaded; try again later."""


class APIConnectionError(ProviderError):
    """The request did not reach the provider or the connection broke."""

    default_retryable = True


class APITimeoutError(APIConnectionError):
    """The request timed out."""


class DeadlineExceeded(APITimeoutError):
    """The request's deadline passed: its ``timeout`` (or the retry policy's ``deadline``) bounds every
    attempt and the waits between them together. Its ``error_type`` is ``"deadline_exceeded"``, and it
    is never retried: the time is gone."""

    default_retryable = False


class MalformedResponseError(ProviderError):
    """The provider's reply (or a stream event) could not be parsed or did not make sense."""


class StreamIncompleteError(MalformedResponseError):
    """A streamed reply ended before its terminal event (``[DONE]``/a finish reason, ``message_stop``,
    ``response.completed``, ``done: true``), e.g. a server that failed after sending its 200.

    What arrived is not a reply: it is raised instead of returning it, so no tool runs on half a
    reply. It is not retried (part of the stream may have been delivered already).
    """


class ToolCallDecisionError(ChatClientError, ValueError):
    """The decisions given to resume a paused reply are incomplete, unknown, duplicated or invalid.

    Raised before any call runs.
    """


class PendingStateError(ChatClientError):
    """A paused tool-call state cannot be resumed. Raised before any call runs."""


class PendingStateNotFoundError(PendingStateError):
    """No pending state under this id: never saved, already resumed (states are single-use), or expired."""


class PendingStateExpiredError(PendingStateError):
    """The pending state is past its expiry."""


class PendingStateTamperedError(PendingStateError):
    """The pending state does not match its digest, or its seal does not verify."""


class PendingStateReusedError(PendingStateError):
    """The pending state was already resumed: its nonce was redeemed (states are single-use)."""


class TurnInProgressError(PendingStateNotFoundError, PendingStateReusedError):
    """Another resume holds this paused turn: it is running its tools, or the process running them
    stopped before their results were recorded. Nothing ran. (A ``PendingStateNotFoundError`` too, as
    the loser of two resumes always was: handlers of it still match.) If that process is known to be gone,
    resume with ``resume_from(..., after_crash=True)``: the calls it started are then reported to the
    model as interrupted with an unknown outcome (an ``idempotent`` tool runs again)."""


class TurnInterruptedError(ChatClientError):
    """A model round failed after tools of the turn ran; ``__cause__`` is the failure. The tools'
    results are kept in ``continuation``: finish the turn with it, nothing runs twice."""

    def __init__(self, message: str, continuation: Any) -> None:
        super().__init__(message)
        self.continuation = continuation


class UsageLimitExceededError(ChatClientError):
    """A usage limit (requests or tokens, per turn or per conversation) would be passed by the next
    model round; it was not sent. ``limit`` names it; raise the limit and continue the turn with
    ``continuation``."""

    def __init__(self, message: str, limit: str, continuation: Any) -> None:
        super().__init__(message)
        self.limit = limit
        self.continuation = continuation


class ToolError(ChatClientError):
    """Something went wrong around one tool call; ``tool_name`` and ``call_id`` say which."""

    def __init__(self, message: str, *, tool_name: str, call_id: str | None = None) -> None:
        self.tool_name = tool_name
        self.call_id = call_id
        super().__init__(message)


class ToolArgumentsError(ToolError):
    """The model's arguments are not valid JSON or fail the tool's schema."""


class UnknownToolError(ToolError):
    """The model called a tool that is not registered for this request."""

    def __init__(self, message: str, *, tool_name: str, call_id: str | None, available: list[str]) -> None:
        self.available = available
        super().__init__(message, tool_name=tool_name, call_id=call_id)


class ToolExecutionError(ToolError):
    """The tool raised; the original exception is ``__cause__``."""


class ToolCallLimitExceededError(ToolError):
    """A per-turn tool-call limit (per tool, total, or identical calls) was reached.

    Raised only under ``ToolCallLimitPolicy.RAISE``; no call of the offending reply has run.
    """

    def __init__(self, message: str, *, tool_name: str, limit: int, kind: str) -> None:
        self.limit = limit
        self.kind = kind
        super().__init__(message, tool_name=tool_name)


class ToolCallUnauthorizedError(ToolCallDecisionError):
    """An approver may not make a decision they gave (or a decision has no approver where one is
    required). Raised before any call of the paused reply runs; the pending state stays redeemable,
    so the right person can still decide.

    ``refused`` holds ``(call_id, tool_name, why)`` for every refused decision; ``call_id``,
    ``tool_name`` and ``approver`` name the first.
    """

    def __init__(self, message: str, *, approver: str | None, refused: list[tuple[str, str, str]]) -> None:
        self.approver = approver
        self.refused = refused
        self.call_id: str | None = refused[0][0] if refused else None
        self.tool_name: str | None = refused[0][1] if refused else None
        super().__init__(message)


class UnknownModelPriceError(ChatClientError, LookupError):
    """A ``PriceTable`` has no price for a reply's model (``model``; ``None`` when the reply named
    none): the cost is not guessed, nor counted as zero."""

    def __init__(self, message: str, model: str | None) -> None:
        self.model = model
        super().__init__(message)


class PendingConversationMismatchError(PendingStateError, ValueError):
    """A paused state was resumed under another conversation id than the one it paused in.
    Raised before anything runs: the state is kept and may be resumed in its own conversation."""

    def __init__(self, paused_in: str, resumed_in: str) -> None:
        self.paused_in, self.resumed_in = paused_in, resumed_in
        super().__init__(
            f"This pending state paused in conversation {paused_in!r}, not {resumed_in!r}; nothing ran "
            f"and the state is kept: resume it with .conversation({paused_in!r}) (or name no conversation)"
        )


class PendingStoreError(PendingStateError):
    """The pending-state store or nonce ledger failed (unreachable, restarted, timed out); ``store``
    names it and the driver's error is the cause. Nothing ran: a resume may be retried once the
    store is back."""

    def __init__(self, message: str, *, store: str) -> None:
        self.store = store
        super().__init__(message)
