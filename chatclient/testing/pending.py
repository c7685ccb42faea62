"""The contracts of pending-state stores and nonce ledgers, as pytest classes to subclass.

``class TestMine(PendingToolCallStoreContract)`` with a ``store`` fixture (and ``expiring_store``,
a store whose ttl is a fraction of a second); ``NonceLedgerContract`` with a ``ledger`` fixture.
Races run on :data:`RACERS` threads released together by a barrier.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from ..errors import PendingStateExpiredError, PendingStateNotFoundError
from ..messages import AssistantMessage, ToolCall, UserMessage
from ..tools.confirmation import PendingCall, PendingToolCalls
from ..tools.pending import AsyncNonceLedger, AsyncPendingToolCallStore, NonceLedger, PendingToolCallStore

__all__ = [
    "RACERS",
    "AsyncNonceLedgerContract",
    "AsyncPendingToolCallStoreContract",
    "NonceLedgerContract",
    "PeekablePendingStoreContract",
    "PendingToolCallStoreContract",
    "race",
    "sample_pending",
]

T = TypeVar("T")
RACERS = 32


def sample_pending(expires_in: float | None = None) -> PendingToolCalls:
    call = ToolCall(id="b1", name="book", arguments='{"name": "Ada"}')
    return PendingToolCalls.create(
        [UserMessage("Book for Ada"), AssistantMessage(tool_calls=[call])],
        [PendingCall(id="b1", name="book", arguments=call.arguments, requires_confirmation=True)],
        reply_id="r1",
        expires_in=expires_in,
        turn_id="t1",
    )


def race(action: Callable[[], T], n: int = RACERS) -> list[T | BaseException]:
    """Run ``action`` on ``n`` threads released at once; each result or exception, in order."""
    barrier = threading.Barrier(n)

    def one() -> T | BaseException:
        barrier.wait()
        try:
            return action()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda _: one(), range(n)))


class PendingToolCallStoreContract:
    def test_a_state_is_taken_once(self, store: PendingToolCallStore) -> None:
        pending = sample_pending()
        state_id = store.save(pending)
        assert store.take(state_id) == pending
        with pytest.raises(PendingStateNotFoundError):
            store.take(state_id)
        with pytest.raises(PendingStateNotFoundError):
            store.take("no-such-id")

    def test_ids_are_new_and_random(self, store: PendingToolCallStore) -> None:
        ids = {store.save(sample_pending()) for _ in range(10)}
        assert len(ids) == 10 and all(len(i) >= 32 for i in ids)

    def test_exactly_one_of_many_concurrent_takers_wins(self, store: PendingToolCallStore) -> None:
        state_id = store.save(sample_pending())
        results = race(lambda: store.take(state_id))
        assert sum(isinstance(r, PendingToolCalls) for r in results) == 1
        assert all(isinstance(r, (PendingToolCalls, PendingStateNotFoundError)) for r in results)

    def test_an_expired_state_is_refused(self, expiring_store: PendingToolCallStore) -> None:
        state_id = expiring_store.save(sample_pending())
        time.sleep(0.3)  # past the store's 0.1 s ttl; the outcome does not depend on timing beyond it
        with pytest.raises((PendingStateExpiredError, PendingStateNotFoundError)):
            expiring_store.take(state_id)



class PeekablePendingStoreContract(PendingToolCallStoreContract):
    """For stores with ``peek(state_id)`` (non-destructive, for UIs and approver checks)."""

    def test_peek_leaves_the_state_and_never_shows_a_taken_one(self, store: PendingToolCallStore) -> None:
        pending = sample_pending()
        state_id = store.save(pending)
        assert store.peek(state_id) == pending
        assert store.peek(state_id) == pending
        store.take(state_id)
        with pytest.raises(PendingStateNotFoundError):
            store.peek(state_id)
        assert store.discard(store.save(pending)) is True  # type: ignore[attr-defined]


class NonceLedgerContract:
    def test_a_nonce_is_redeemed_once_and_again_after_release(self, ledger: NonceLedger) -> None:
        nonce = sample_pending().nonce
        assert ledger.redeem(nonce, time.time() + 60) is True
        assert ledger.redeem(nonce, time.time() + 60) is False
        ledger.release(nonce)
        assert ledger.redeem(nonce, None) is True

    def test_exactly_one_of_many_concurrent_redeemers_wins(self, ledger: NonceLedger) -> None:
        nonce = sample_pending().nonce
        assert race(lambda: ledger.redeem(nonce, time.time() + 60)).count(True) == 1


async def arace(action: Callable[[], Any], n: int = RACERS) -> list[Any]:
    """Run ``n`` tasks of ``action`` at once; each result or exception, in order."""
    return await asyncio.gather(*(action() for _ in range(n)), return_exceptions=True)


class AsyncPendingToolCallStoreContract:
    """The store contract for an async face: ``astore`` and ``aexpiring_store`` fixtures (a ttl of
    a fraction of a second); races run as :data:`RACERS` tasks."""

    async def test_a_state_is_taken_once(self, astore: AsyncPendingToolCallStore) -> None:
        pending = sample_pending()
        state_id = await astore.save(pending)
        assert await astore.peek(state_id) == pending, "peek leaves it"
        assert await astore.take(state_id) == pending
        with pytest.raises(PendingStateNotFoundError):
            await astore.take(state_id)
        with pytest.raises(PendingStateNotFoundError):
            await astore.peek(state_id)

    async def test_exactly_one_of_many_concurrent_takers_wins(self, astore: AsyncPendingToolCallStore) -> None:
        state_id = await astore.save(sample_pending())
        results = await arace(lambda: astore.take(state_id))
        assert sum(isinstance(r, PendingToolCalls) for r in results) == 1
        assert all(isinstance(r, (PendingToolCalls, PendingStateNotFoundError)) for r in results)

    async def test_an_expired_state_is_refused(self, aexpiring_store: AsyncPendingToolCallStore) -> None:
        state_id = await aexpiring_store.save(sample_pending())
        await asyncio.sleep(0.3)  # past the store's 0.1 s ttl; the outcome does not depend on timing beyond it
        with pytest.raises((PendingStateExpiredError, PendingStateNotFoundError)):
            await aexpiring_store.take(state_id)


class AsyncNonceLedgerContract:
    """The ledger contract for an async face: an ``aledger`` fixture."""

    async def test_a_nonce_is_redeemed_once_and_again_after_release(self, aledger: AsyncNonceLedger) -> None:
        nonce = sample_pending().nonce
        assert await aledger.redeem(nonce, time.time() + 60) is True
        assert await aledger.redeem(nonce, time.time() + 60) is False
        await aledger.release(nonce)
        assert await aledger.redeem(nonce, None) is True

    async def test_exactly_one_of_many_concurrent_redeemers_wins(self, aledger: AsyncNonceLedger) -> None:
        nonce = sample_pending().nonce
        assert (await arace(lambda: aledger.redeem(nonce, time.time() + 60))).count(True) == 1
