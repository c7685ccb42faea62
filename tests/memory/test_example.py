"""examples/conversation.py runs offline on SQLite, and on Redis and PostgreSQL given their URL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chatclient.testing.servers import POSTGRES_URL, REDIS_URL, server_url

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "conversation.py"
EXPECTED = [
    "1: 2 tables at 20:00.",
    "2: waiting for a decision on ['b1'] | stored events: 4",
    "2: Booked for Ada at 20:00.",
    "3: We spoke 2 times before.",
    "log: 10 events: user assistant tool assistant user assistant tool assistant user assistant",
]


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_the_conversation_example(backend: str) -> None:
    args = [] if backend == "sqlite" else [server_url(REDIS_URL if backend == "redis" else POSTGRES_URL)]
    command = [sys.executable, str(EXAMPLE), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == EXPECTED
