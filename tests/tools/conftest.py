"""Fixtures of the tool tests that hang tools on purpose."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from chatclient.tools import _execution
from chatclient.tools._pool import ToolThreadPool

from .helpers import Discards


@pytest.fixture
def discards() -> Iterator[Discards]:
    """The late results discarded while the test runs."""
    handler = Discards()
    logger = logging.getLogger("chatclient.tools")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToolThreadPool]:
    """A shared pool of its own, sized as the real one, so no other test's threads count."""
    fresh = ToolThreadPool(_execution._POOL_WORKERS, _execution._MAX_ABANDONED, "test-tool")
    monkeypatch.setattr(_execution, "_pool", fresh)
    yield fresh
    fresh.shutdown()
