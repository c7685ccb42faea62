"""Fixtures for the store tests: a fresh key/table prefix per test, real servers from .ci/run."""

from __future__ import annotations

import uuid

import pytest

from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url


@pytest.fixture
def prefix() -> str:
    """Isolates one test's keys and tables, so tests can share one server."""
    return f"t{uuid.uuid4().hex[:12]}_"


@pytest.fixture
def redis_url() -> str:
    return server_url(REDIS_URL)


@pytest.fixture
def postgres_url() -> str:
    return server_url(POSTGRES_URL)
