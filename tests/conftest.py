"""Shared fixtures: small tools and scripted replies used across the suite."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from chatclient import tool


@pytest.fixture(autouse=True)
def _document_readers_restored() -> Iterator[None]:
    """``register_reader`` is process-wide: a test (or a docs snippet) that registers a reader for a
    suffix must not change what a later test reads."""
    readers = sys.modules.get("chatclient.retrieval.readers")
    before = dict(readers._readers) if readers is not None else None
    yield
    readers = sys.modules.get("chatclient.retrieval.readers")
    if readers is not None:
        with readers._readers_lock:
            readers._readers.clear()
            readers._readers.update(before if before is not None else readers._BUILTIN_READERS)


class Counters:
    """Tools with call counters, like the seed's booking tools."""

    def __init__(self) -> None:
        self.weather_calls = 0
        self.sales_calls = 0

    @tool(description="Get the weather of a city")
    def get_weather(self, city: str) -> str:
        self.weather_calls += 1
        return f"Sunny in {city}"

    @tool(description="Query sales for a period")
    def query_sales(self, period: str) -> dict[str, object]:
        self.sales_calls += 1
        return {"period": period, "amount": 1_250_000}


@pytest.fixture
def counters() -> Counters:
    return Counters()


class Rendezvous:
    """Proves calls run at the same time: each one arrives and waits until all ``n`` have arrived.

    Calls that ran one after the other never all arrive, so the first one gives up after
    ``patience`` seconds and the test fails with ``overlap is False``. No clock decides a pass.
    """

    def __init__(self, n: int, patience: float = 10.0) -> None:
        import threading

        self._n = n
        self._patience = patience
        self._arrived = 0
        self._condition = threading.Condition()
        self.overlap = True

    def _arrive(self) -> None:
        with self._condition:
            self._arrived += 1
            self._condition.notify_all()

    def _all_here(self) -> bool:
        return self._arrived >= self._n

    def wait(self) -> None:
        """For sync calls (each on its own thread)."""
        self._arrive()
        with self._condition:
            if not self._condition.wait_for(self._all_here, timeout=self._patience):
                self.overlap = False

    async def await_all(self) -> None:
        """For async calls (tasks on one loop): yield to the loop until everyone is here."""
        import asyncio
        import time

        self._arrive()
        give_up = time.monotonic() + self._patience
        while not self._all_here():
            if time.monotonic() > give_up:
                self.overlap = False
                return
            await asyncio.sleep(0.001)
