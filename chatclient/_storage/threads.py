"""Blocking store calls (SQLite, a sync store behind an async face) run in a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_thread"]

T = TypeVar("T")


async def in_thread(call: Callable[[], T]) -> T:
    """Run a blocking store call off the event loop."""
    return await asyncio.to_thread(call)
