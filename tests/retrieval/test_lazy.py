"""Retrieval loads nothing it does not use: no store driver, no asyncio for a sync script."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from chatclient.retrieval import Document, InMemoryVectorStore, Key, SearchRequest
store = InMemoryVectorStore()
store.add([Document("a", "x", {"k": 1})], [[1.0, 0.0]])
assert store.search(SearchRequest(vector=[1.0, 0.0], filter=Key("k") == 1))[0].id == "a"
loaded = [m for m in ("asyncio", "sqlite_vec", "sqlite3", "psycopg", "chatclient.retrieval.sqlite",
                      "chatclient.retrieval.postgres", "chatclient.client") if m in sys.modules]
print(loaded)
"""


def test_the_in_memory_store_loads_no_driver_and_no_asyncio() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_store_modules_load_their_drivers_only_when_a_store_is_made() -> None:
    code = (
        "import sys\n"
        "import chatclient.retrieval.sqlite, chatclient.retrieval.postgres, providers.openai, providers.ollama\n"
        "print([m for m in ('sqlite_vec', 'pysqlite3', 'psycopg', 'psycopg_pool', 'providers.openai.embedding',"
        " 'providers.ollama.embedding') if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
