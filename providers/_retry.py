"""Retries: the policy, and the loop that runs the attempts after a retryable failure, honouring
``Retry-After`` within the request's deadline. The loop is entered only after a first attempt failed,
so a request that succeeds first time pays nothing for it."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import httpx2

from chatclient.errors import APITimeoutError, ProviderError

from ._deadline import DEADLINE_EXCEEDED, Deadline

__all__ = ["RetryPolicy", "Retrying"]

_log = logging.getLogger("chatclient.providers")


class RetryPolicy(NamedTuple):
    """How failed requests are retried: exponential backoff, or what the provider asks for.

    A ``NamedTuple`` rather than a frozen dataclass (so for ``ErrorDetails`` and ``WireMapping``): as
    immutable, built and read the same way (``policy._replace(...)`` for a changed copy), and defined
    at import for a tenth of a frozen dataclass's cost, which compiles six methods per class.
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
    its timeouts cut to the time left. Hitting it raises ``APITimeoutError``."""


class Retrying:
    """The retry loop of a transport: its ``_send``/``_asend`` make one attempt each."""

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

    def _should_retry(self, error: BaseException) -> bool:
        if not isinstance(error, ProviderError) or not error.retryable or self.retry.max_retries == 0:
            return False
        return error.retry_after is None or error.retry_after <= self.retry.max_retry_after

    def _next_wait(self, error: ProviderError, attempt: int, deadline: Deadline | None) -> float:
        """The pause before retry ``attempt``, or the error to raise instead (``error`` or the deadline's)."""
        if error.error_type == DEADLINE_EXCEEDED:
            raise error
        if deadline is not None and isinstance(error, APITimeoutError) and deadline.expired():
            raise deadline.exceeded(self.provider, "the last attempt was abandoned") from error
        if not self._should_retry(error) or attempt > self.retry.max_retries:
            raise error
        wait = self._wait(error, attempt)
        if deadline is not None and wait >= deadline.left():
            raise deadline.exceeded(self.provider, f"{error}; a retry in {wait:.2f} s would end past it") from error
        self._before_retry(attempt, error, wait)
        return wait

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

        The success path is one plain call (no retry loop, no closure): the loop is entered only
        after a failure, so a request that succeeds first time pays for nothing but the deadline's
        clock (when set).
        """
        try:
            return self._send(path, body, headers, deadline, stream=stream)
        except ProviderError as error:
            return self._retried(error, path, body, headers, deadline, stream=stream)

    def _retried(
        self,
        failed: ProviderError,
        path: str,
        body: Any,
        headers: Mapping[str, str] | None,
        deadline: Deadline | None,
        *,
        stream: bool,
    ) -> httpx2.Response:
        """The retries after a first attempt failed with ``failed``."""
        attempt = 1
        while True:
            time.sleep(self._next_wait(failed, attempt, deadline))
            attempt += 1
            try:
                return self._send(path, body, headers, deadline, stream=stream)
            except ProviderError as error:
                failed = error

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
        import asyncio

        attempt = 1
        while True:
            await asyncio.sleep(self._next_wait(failed, attempt, deadline))
            attempt += 1
            try:
                return await self._asend(path, body, headers, deadline, stream=stream)
            except ProviderError as error:
                failed = error
