"""Retries: the policy, and the attempts after a retryable failure, run by tenacity within the
request's deadline and honouring ``Retry-After``.

The first attempt runs outside tenacity: a request that succeeds first time imports nothing and pays
for no controller. Its failure is fed to a controller made for this one request (tenacity keeps a
controller's state per thread, so two tasks of one event loop sharing one would corrupt each other),
as that controller's first attempt; tenacity then decides, waits and runs the rest. The controller's
stop raises the library's own deadline error; its wait takes the provider's ``Retry-After`` first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import httpx2

from chatclient.errors import APITimeoutError, DeadlineExceeded, ProviderError

from ._deadline import DEADLINE_EXCEEDED, Deadline

if TYPE_CHECKING:
    import tenacity
    from tenacity.retry import RetryBaseT
    from tenacity.stop import StopBaseT
    from tenacity.wait import WaitBaseT

__all__ = ["RetryPolicy", "Retrying"]

_log = logging.getLogger("chatclient.providers")


class RetryPolicy(NamedTuple):
    """How failed requests are retried: exponential backoff, or what the provider asks for.

    A ``NamedTuple`` rather than a frozen dataclass (so for ``ErrorDetails`` and ``WireMapping``): as
    immutable, built and read the same way (``policy._replace(...)`` for a changed copy), and defined
    at import for a tenth of a frozen dataclass's cost, which compiles six methods per class.

    tenacity's own strategies may replace the built-in ones: ``wait`` (the pause between attempts
    when the provider asked for none), ``stop`` (when to give up; replaces ``max_retries``) and
    ``retry`` (which failures to retry: it narrows the retryable ones, a failure the provider calls
    final, a bad request say, is never retried), or ``retrying``, a whole ``tenacity.Retrying`` whose
    strategies and hooks are taken. Whatever is given, the ``deadline`` holds, ``Retry-After`` is
    honoured, and every request gets a controller of its own.
    """

    max_retries: int = 2
    """Retries after the first attempt (0 turns retrying off)."""
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    """A provider's ``Retry-After`` longer than this is not waited for: the error is raised."""
    deadline: float | None = None
    """Seconds one request may take in all, attempts and waits together (``None``: no limit but
    ``max_retries`` and a numeric model ``timeout``, which is a deadline too; the shorter applies).
    No retry starts, and no wait is taken, that would end past it; the attempt that runs into it has
    its timeouts cut to the time left. Hitting it raises ``DeadlineExceeded`` (an ``APITimeoutError``)."""
    wait: WaitBaseT | None = None
    """A tenacity wait strategy (``wait_fixed(1)``, ``wait_random_exponential(...)``) for the pause
    before each retry when the provider gave no ``Retry-After``."""
    stop: StopBaseT | None = None
    """A tenacity stop strategy (``stop_after_attempt(5)``, ``stop_after_delay(30)``); replaces ``max_retries``."""
    retry: RetryBaseT | None = None
    """A tenacity retry strategy (``retry_if_exception_type(RateLimitError)``): of the retryable
    failures, which to retry."""
    retrying: tenacity.BaseRetrying | None = None
    """A whole tenacity policy: its ``wait``, ``stop``, ``retry`` and hooks (``before``, ``after``,
    ``before_sleep``) are used, in a controller made per request (it is never run itself)."""


class _Rules:
    """The strategies of one request's controller: the policy's own under the library's rules (only
    retryable failures, ``Retry-After`` first, the deadline's error when it would be passed)."""

    __slots__ = ("breach", "deadline", "limit", "narrower", "transport", "wait", "whole")

    def __init__(self, transport: Retrying, deadline: Deadline | None) -> None:
        import tenacity

        policy = transport.retry
        whole = policy.retrying
        self.transport, self.deadline, self.whole = transport, deadline, whole
        self.narrower = policy.retry or (whole.retry if whole is not None else None)
        self.wait = policy.wait or (whole.wait if whole is not None else None)
        self.limit = policy.stop or (whole.stop if whole is not None else None)
        if self.limit is None:
            self.limit = tenacity.stop_after_attempt(policy.max_retries + 1)
        self.breach: DeadlineExceeded | None = None
        """Set when the stop was the deadline's: the error to raise."""

    def controller(self, kind: type[tenacity.BaseRetrying]) -> Any:
        import tenacity

        hooks: dict[str, Any] = {"sleep": _sleep if kind is tenacity.Retrying else _asleep}
        if self.whole is not None:
            hooks.update(before=self.whole.before, after=self.whole.after)
        return kind(
            retry=self.retryable,
            wait=self.pause,
            stop=self.stop,
            retry_error_callback=self.give_up,
            before_sleep=self.before_sleep,
            **hooks,
        )

    def retryable(self, state: tenacity.RetryCallState) -> bool:
        error, deadline = _failure(state), self.deadline
        if not isinstance(error, ProviderError) or error.error_type == DEADLINE_EXCEEDED:
            return False
        if deadline is not None and isinstance(error, APITimeoutError) and deadline.expired():
            return True  # the stop turns it into the deadline's error
        if not self.transport._retries(error, deadline):
            return False
        return self.narrower is None or bool(self.narrower(state))

    def pause(self, state: tenacity.RetryCallState) -> float:
        error = _failure(state)
        assert isinstance(error, ProviderError)  # ``retryable`` let no other through
        if self.wait is not None and error.retry_after is None:
            return float(self.wait(state))
        return self.transport._wait(error, state.attempt_number)

    def stop(self, state: tenacity.RetryCallState) -> bool:
        error, deadline = _failure(state), self.deadline
        if deadline is not None:
            why = None
            if isinstance(error, APITimeoutError) and deadline.expired():
                why = "the last attempt was abandoned"
            elif state.upcoming_sleep >= deadline.left():
                why = f"{error}; a retry in {state.upcoming_sleep:.2f} s would end past it"
            if why is not None:
                self.breach = deadline.exceeded(self.transport.provider, why)
                return True
        return bool(self.limit(state)) if self.limit is not None else False

    def give_up(self, state: tenacity.RetryCallState) -> Any:
        error = _failure(state)
        if self.breach is not None:
            raise self.breach from error
        raise error or AssertionError("tenacity gave up without a failure")

    def before_sleep(self, state: tenacity.RetryCallState) -> None:
        error = _failure(state)
        assert isinstance(error, ProviderError)
        self.transport._before_retry(state.attempt_number, error, state.upcoming_sleep)
        if self.whole is not None and self.whole.before_sleep is not None:
            self.whole.before_sleep(state)


def _failure(state: tenacity.RetryCallState) -> BaseException | None:
    outcome = state.outcome
    return outcome.exception() if outcome is not None and outcome.failed else None


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up at each call: a test may replace it


async def _asleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


class Retrying:
    """The retries of a transport: its ``_send``/``_asend`` make one attempt each."""

    provider: str
    retry: RetryPolicy

    def _send(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        raise NotImplementedError

    async def _asend(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        raise NotImplementedError

    def _retries(self, error: ProviderError, deadline: Deadline | None) -> bool:
        """Whether ``error`` may be retried here at all: the provider says it may, retrying is on, and
        any ``Retry-After`` is one worth waiting for. A transport that retries by other means (an
        official SDK's client) says no."""
        policy = self.retry
        if not error.retryable or (policy.max_retries == 0 and policy.stop is None and policy.retrying is None):
            return False
        return error.retry_after is None or error.retry_after <= policy.max_retry_after

    def _wait(self, error: ProviderError, attempt: int) -> float:
        """What the provider asked for (``Retry-After``), else exponential backoff, capped."""
        if error.retry_after is not None:
            return float(error.retry_after)
        return float(min(self.retry.max_backoff, self.retry.initial_backoff * (2 ** (attempt - 1))))

    def _before_retry(self, attempt: int, error: ProviderError, wait: float) -> None:
        """Each retry is logged and reported to the request's observers (``chatclient.observation``)."""
        _log.info("%s request failed (%s); retry %d in %.2f s", self.provider, error, attempt, wait)
        from chatclient.observation import notify_retry  # only when a request is retried

        notify_retry(attempt, error, wait, self.provider)

    def _send_retried(
        self, path: str, body: Any, headers: Mapping[str, str] | None, deadline: Deadline | None, *, stream: bool
    ) -> httpx2.Response:
        """One attempt, then more after each retryable failure while the policy and the deadline allow.

        The success path is one plain call: tenacity is imported, and a controller made, only after
        a failure.
        """
        try:
            return self._send(path, body, headers, deadline, stream=stream)
        except ProviderError as error:
            return self._retried(error, lambda: self._send(path, body, headers, deadline, stream=stream), deadline)

    def _retried(
        self, failed: ProviderError, attempt: Callable[[], httpx2.Response], deadline: Deadline | None
    ) -> httpx2.Response:
        """The retries after a first attempt failed with ``failed``: tenacity sees that failure as its
        first attempt's, and runs ``attempt`` for each retry it decides on."""
        import tenacity

        first: list[ProviderError] = [failed]
        for each in _Rules(self, deadline).controller(tenacity.Retrying):
            with each:
                if first:
                    raise first.pop()
                return attempt()
        raise AssertionError("tenacity ended without an outcome")  # pragma: no cover

    async def _aretried(
        self,
        failed: ProviderError,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: Deadline | None,
        *,
        stream: bool,
    ) -> httpx2.Response:
        """As :meth:`_retried`. The hot paths await :meth:`_asend` themselves and this only after it
        failed: every coroutine between a caller and the socket is resumed at each of the request's
        awaits, and 300 requests in flight resume a chain thousands of times."""
        import tenacity

        first: list[ProviderError] = [failed]
        async for each in _Rules(self, deadline).controller(tenacity.AsyncRetrying):
            with each:
                if first:
                    raise first.pop()
                return await self._asend(path, body, headers, deadline, stream=stream)
        raise AssertionError("tenacity ended without an outcome")  # pragma: no cover
