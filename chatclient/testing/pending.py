"""The contracts of pending-state stores and nonce ledgers, as pytest classes to subclass.

``class TestMine(PeekablePendingStoreContract)`` with a ``store`` fixture (and ``expiring_store``,
a store whose ttl is a fraction of a second); ``NonceLedgerContract`` with a ``ledger`` fixture.
Races run on :data:`RACERS` threads released together by a barrier. The async contracts take
``astore``/``aexpiring_store``/``aledger`` and race :data:`RACERS` tasks.

The collision test forces the next state id through ``chatclient.pending.state._new_id`` (where
the bundled stores draw theirs); a store with its own id source overrides the ``fixed_state_id``
fixture so that its next ids are the one returned.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from ..errors import ConfigurationError, PendingStateError, PendingStateExpiredError, PendingStateNotFoundError
from ..messages import AssistantMessage, ToolCall, UserMessage
from ..pending.state import AsyncNonceLedger, AsyncPendingToolCallStore, NonceLedger, PendingToolCallStore
from ..tools.confirmation import PendingCall, PendingToolCalls

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


GONE = (PendingStateExpiredError, PendingStateNotFoundError)
"""What a store raises for a state past its expiry (Redis forgets it; the others know it expired)."""


class _ForcedIds:
    @pytest.fixture
    def fixed_state_id(self, monkeypatch: pytest.MonkeyPatch) -> str:
        """Make every new state id the same one, so a second save collides with the first."""
        from ..pending import state as pending

        state_id = "fixed-" + "x" * 32
        monkeypatch.setattr(pending, "_new_id", lambda: state_id)
        return state_id


class PendingToolCallStoreContract(_ForcedIds):
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
        with pytest.raises(GONE):
            expiring_store.take(state_id)

    def test_the_same_state_saved_twice_is_two_states_each_taken_once(self, store: PendingToolCallStore) -> None:
        pending = sample_pending()
        first, second = store.save(pending), store.save(pending)
        assert first != second
        assert (store.take(first), store.take(second)) == (pending, pending)
        with pytest.raises(PendingStateNotFoundError):
            store.take(first)

    def test_a_colliding_id_is_refused_and_the_first_state_kept(
        self, store: PendingToolCallStore, fixed_state_id: str
    ) -> None:
        first, other = sample_pending(), sample_pending()
        assert store.save(first) == fixed_state_id
        with pytest.raises(PendingStateError):
            store.save(other)
        assert store.take(fixed_state_id) == first, "a save never overwrites"
        with pytest.raises(PendingStateNotFoundError):
            store.take(fixed_state_id)

    def test_purge_expired_removes_only_expired_states(self, store: Any) -> None:
        """``purge_expired()`` returns how many it removed: 1 here, or 0 where the server already
        expired the key (Redis); either way the expired state is gone and the live one stays."""
        live = sample_pending()
        expired, kept = store.save(sample_pending(expires_in=0.1)), store.save(live)
        time.sleep(0.3)  # past the state's 0.1 s expiry; the outcome does not depend on timing beyond it
        assert store.purge_expired() in (0, 1)
        assert store.purge_expired() == 0
        with pytest.raises(PendingStateNotFoundError):  # gone, not merely expired
            store.take(expired)
        assert store.take(kept) == live


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

    def test_discard_drops_a_state_once(self, store: Any) -> None:
        state_id = store.save(sample_pending())
        assert store.discard(state_id) is True
        assert store.discard(state_id) is False
        assert store.discard("no-such-id") is False
        with pytest.raises(PendingStateNotFoundError):
            store.take(state_id)
        with pytest.raises(PendingStateNotFoundError):
            store.peek(state_id)

    def test_discard_of_an_expired_state_answers_false_and_drops_it(self, expiring_store: Any) -> None:
        """The same answer on every backend: Redis has already forgotten an expired key."""
        state_id = expiring_store.save(sample_pending())
        time.sleep(0.3)  # past the store's 0.1 s ttl; the outcome does not depend on timing beyond it
        assert expiring_store.discard(state_id) is False
        with pytest.raises(PendingStateNotFoundError):
            expiring_store.take(state_id)

    @pytest.mark.parametrize("bad", [None, "", "a\x00b", "x" * 513, "é" * 257])
    def test_an_id_no_store_could_hold_is_refused_the_same_everywhere(self, store: Any, bad: Any) -> None:
        pending = sample_pending()
        kept = store.save(pending)
        for operation in (store.take, store.peek, store.discard):
            with pytest.raises(ConfigurationError):
                operation(bad)
        assert store.peek(kept) == pending

    def test_peek_of_an_expired_state_is_refused(self, expiring_store: Any) -> None:
        state_id = expiring_store.save(sample_pending())
        time.sleep(0.3)  # past the store's 0.1 s ttl
        with pytest.raises(GONE):
            expiring_store.peek(state_id)


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


class AsyncPendingToolCallStoreContract(_ForcedIds):
    """The store contract for an async face (``peek``, ``discard`` and ``purge_expired`` included):
    ``astore`` and ``aexpiring_store`` fixtures (a ttl of a fraction of a second); races run as
    :data:`RACERS` tasks."""

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
        with pytest.raises(GONE):
            await aexpiring_store.take(state_id)
        with pytest.raises(GONE):
            await aexpiring_store.peek(state_id)

    async def test_the_same_state_saved_twice_is_two_states_each_taken_once(self, astore: Any) -> None:
        pending = sample_pending()
        first, second = await astore.save(pending), await astore.save(pending)
        assert first != second
        assert (await astore.take(first), await astore.take(second)) == (pending, pending)

    async def test_a_colliding_id_is_refused_and_the_first_state_kept(self, astore: Any, fixed_state_id: str) -> None:
        first = sample_pending()
        assert await astore.save(first) == fixed_state_id
        with pytest.raises(PendingStateError):
            await astore.save(sample_pending())
        assert await astore.take(fixed_state_id) == first, "a save never overwrites"

    @pytest.mark.parametrize("bad", [None, "a\x00b", "x" * 513])
    async def test_an_id_no_store_could_hold_is_refused_the_same_everywhere(self, astore: Any, bad: Any) -> None:
        pending = sample_pending()
        kept = await astore.save(pending)
        for operation in (astore.take, astore.peek, astore.discard):
            with pytest.raises(ConfigurationError):
                await operation(bad)
        assert await astore.peek(kept) == pending

    async def test_discard_drops_a_state_once(self, astore: Any) -> None:
        state_id = await astore.save(sample_pending())
        assert await astore.discard(state_id) is True
        assert await astore.discard(state_id) is False
        with pytest.raises(PendingStateNotFoundError):
            await astore.peek(state_id)

    async def test_discard_of_an_expired_state_answers_false_and_drops_it(self, aexpiring_store: Any) -> None:
        state_id = await aexpiring_store.save(sample_pending())
        await asyncio.sleep(0.3)  # past the store's 0.1 s ttl
        assert await aexpiring_store.discard(state_id) is False
        with pytest.raises(PendingStateNotFoundError):
            await aexpiring_store.take(state_id)

    async def test_purge_expired_removes_only_expired_states(self, astore: Any) -> None:
        live = sample_pending()
        expired, kept = await astore.save(sample_pending(expires_in=0.1)), await astore.save(live)
        await asyncio.sleep(0.3)  # past the state's 0.1 s expiry
        assert await astore.purge_expired() in (0, 1)
        assert await astore.purge_expired() == 0
        with pytest.raises(PendingStateNotFoundError):
            await astore.take(expired)
        assert await astore.take(kept) == live


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
