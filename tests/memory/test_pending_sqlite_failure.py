"""The SQLite pending store and nonce ledger name themselves when the file fails them, as the Redis
and PostgreSQL ones do (``test_pending_outage.py``): one ``PendingStoreError`` with SQLite's own
error as its cause, and a failed take leaves the state where it was.

The failure is SQLite's own: the store's connection is swapped for one that opened the same file
read-only (a volume mounted read-only, a file whose permissions changed under a running process)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, tool
from chatclient.errors import PendingStoreError
from chatclient.pending.sqlite import SqliteNonceLedger
from chatclient.pending.state import SqlitePendingToolCallStore
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools.confirmation import awaiting_decision


def read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)


def test_a_failing_sqlite_store_names_itself_and_a_failed_take_leaves_the_state(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(description="Wire money", requires_confirmation=True)
    def wire(to: str) -> str:
        ran.append(to)
        return f"sent to {to}"

    def script(prompt: object) -> str | AssistantMessage:
        if prompt.messages[-1].role == "tool":  # type: ignore[attr-defined]
            return "wired"
        return AssistantMessage(tool_calls=[tool_call("wire", {"to": "acct-1"}, id="w")])

    client = ChatClient.builder(ScriptedChatModel(script)).default_tools(wire).build()
    pending = awaiting_decision(client.prompt("wire my rent").call().chat_client_response())
    assert pending is not None
    path = tmp_path / "pending.db"
    store = SqlitePendingToolCallStore(path)
    state_id = store.save(pending)
    store._db._local.db = read_only(path)  # the file can no longer be written through this store
    allow = ToolCallDecisions.of(ToolCallDecision.allow("w"))
    with pytest.raises(PendingStoreError) as raised:
        client.prompt().resume_from(store, state_id, allow).call().content()
    assert raised.value.store == "SqlitePendingToolCallStore"
    assert "SqlitePendingToolCallStore.record_progress failed" in str(raised.value)  # the claim, first write
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert ran == [], "nothing ran"
    for operation, call in (("save", lambda: store.save(pending)), ("discard", lambda: store.discard(state_id))):
        with pytest.raises(PendingStoreError, match=rf"SqlitePendingToolCallStore\.{operation} failed"):
            call()
    back = SqlitePendingToolCallStore(path)
    assert client.prompt().resume_from(back, state_id, allow).call().content() == "wired", "the state was left"
    assert ran == ["acct-1"]


def test_a_failing_sqlite_ledger_names_itself(tmp_path: Path) -> None:
    ledger = SqliteNonceLedger(tmp_path / "ledger.db")
    ledger._db._local.db = read_only(tmp_path / "ledger.db")
    with pytest.raises(PendingStoreError, match=r"SqliteNonceLedger\.redeem failed") as raised:
        ledger.redeem("n-1", None)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(PendingStoreError, match=r"SqliteNonceLedger\.release failed"):
        ledger.release("n-1")
