"""Drivers are optional: importing chatclient.memory needs none, and a missing one names its extra."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from chatclient import ConfigurationError

REDIS, POSTGRES = "chatclient[redis]", "chatclient[postgres]"


def make_redis_repository() -> None:
    from chatclient.memory import RedisSessionRepository

    RedisSessionRepository("redis://127.0.0.1:1")


def make_redis_ledger() -> None:
    from chatclient.pending.redis import RedisNonceLedger

    RedisNonceLedger("redis://127.0.0.1:1")


def make_postgres_repository() -> None:
    from chatclient.memory import PostgresSessionRepository

    PostgresSessionRepository("postgresql://127.0.0.1:1/x")


def make_postgres_ledger() -> None:
    from chatclient.pending.postgres import PostgresNonceLedger

    PostgresNonceLedger("postgresql://127.0.0.1:1/x")


@pytest.mark.parametrize(
    ("blocked", "make", "extra"),
    [
        ("redis", make_redis_repository, REDIS),
        ("redis", make_redis_ledger, REDIS),
        ("psycopg", make_postgres_repository, POSTGRES),
        ("psycopg", make_postgres_ledger, POSTGRES),
    ],
)
def test_a_missing_driver_names_its_extra(
    blocked: str, make: object, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # importing it now raises ImportError
    with pytest.raises(ConfigurationError, match=re.escape(f'pip install "{extra}"')):
        make()  # type: ignore[operator]


def test_importing_memory_loads_no_driver() -> None:
    code = (
        "import sys, chatclient.memory, chatclient.client; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('redis', 'psycopg', 'psycopg_pool', 'sqlite3')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
