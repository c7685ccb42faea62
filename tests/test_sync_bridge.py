"""Sync code that must run async pieces, in a plain script and inside a running loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from chatclient._sync import in_running_loop, iterate_sync, run_sync


async def where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


def test_run_sync_without_a_loop_stays_on_this_thread() -> None:
    assert run_sync(where) == threading.current_thread().name
    assert run_sync(where) == threading.current_thread().name  # the per-thread loop is reused


def test_run_sync_inside_a_running_loop_uses_the_portal() -> None:
    async def main() -> str:
        assert in_running_loop()
        return run_sync(where)

    assert asyncio.run(main()) == "chatclient-portal"


async def numbers() -> AsyncIterator[int]:
    for i in range(3):
        await asyncio.sleep(0)
        yield i


def test_iterate_sync_in_and_out_of_a_loop() -> None:
    assert list(iterate_sync(numbers)) == [0, 1, 2]

    async def main() -> list[int]:
        return list(iterate_sync(numbers))

    assert asyncio.run(main()) == [0, 1, 2]


def test_a_sync_call_made_from_code_running_on_the_portal_does_not_deadlock() -> None:
    """An async tool, run on the portal because a notebook called the sync API, calls the sync API again."""

    async def innermost() -> str:
        await asyncio.sleep(0)
        return threading.current_thread().name

    async def outer() -> tuple[str, str, list[int]]:
        here = threading.current_thread().name
        nested = run_sync(innermost)  # sync API from code on the portal
        items = list(iterate_sync(numbers))
        return here, nested, items

    async def notebook_cell() -> tuple[str, str, list[int]]:
        return run_sync(outer)

    here, nested, items = asyncio.run(notebook_cell())  # a deadlock would hang until pytest-timeout
    assert here == "chatclient-portal"
    assert nested == "chatclient-portal-nested"
    assert items == [0, 1, 2]
