"""The servers .ci/run starts answer (under CI=true a missing one fails, never skips)."""

from __future__ import annotations

import pytest

from chatclient.testing.servers import REDIS_URL, server_url


def test_redis_answers(redis_url: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping() is True
    finally:
        client.close()


def test_postgres_answers(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_missing_server_fails_under_ci_and_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REDIS_URL, raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        server_url(REDIS_URL)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="not set"):
        server_url(REDIS_URL)
