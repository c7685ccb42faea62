"""A conversation that lasts: three turns with tools and a confirmation pause, stored in SQLite.

    python examples/conversation.py                       # a SQLite file in a temporary folder
    python examples/conversation.py redis://127.0.0.1:6379/0
    python examples/conversation.py postgresql://user:pass@127.0.0.1:5432/db

The pause is saved in the same place, so another process could resume it (once). Runs offline:
the model is scripted.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import AssistantMessage, ChatClient, ToolCallDecision, ToolCallDecisions, ToolResponseMessage, tool
from chatclient.memory import SessionMemoryAdvisor
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools.confirmation import awaiting_decision


def stores(url: str | None) -> tuple[Any, Any, Any]:
    """The session log, the pending-state store and the nonce ledger for ``url``."""
    if url is None or url.startswith("sqlite:"):
        from chatclient.memory.sqlite import SqliteSessionRepository
        from chatclient.pending.sqlite import SqliteNonceLedger
        from chatclient.pending.state import SqlitePendingToolCallStore

        path = Path(url[len("sqlite:") :]) if url else Path(tempfile.mkdtemp()) / "conversation.db"
        return SqliteSessionRepository(path), SqlitePendingToolCallStore(path), SqliteNonceLedger(path)
    prefix = f"example_{uuid.uuid4().hex[:8]}_"
    if url.startswith("redis"):
        from chatclient.memory.redis import RedisSessionRepository
        from chatclient.pending.redis import RedisNonceLedger, RedisPendingToolCallStore

        return (
            RedisSessionRepository(url, prefix=prefix),
            RedisPendingToolCallStore(url, prefix=prefix),
            RedisNonceLedger(url, prefix=prefix),
        )
    from chatclient.memory.postgres import PostgresSessionRepository
    from chatclient.pending.postgres import PostgresNonceLedger, PostgresPendingToolCallStore

    return (
        PostgresSessionRepository(url, prefix=prefix),
        PostgresPendingToolCallStore(url, prefix=prefix),
        PostgresNonceLedger(url, prefix=prefix),
    )


class Restaurant:
    @tool(description="Tables free tonight")
    def free_tables(self) -> str:
        return "2 tables at 20:00"

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str, time: str) -> str:
        return f"Booked for {name} at {time}"


def model(prompt: Prompt) -> AssistantMessage | str:
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return f"{last.responses[0].response_data}."
    asked = getattr(last, "text", "")
    if "free" in asked:
        return AssistantMessage(tool_calls=[tool_call("free_tables", {})])
    if "Book" in asked:
        return AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada", "time": "20:00"}, id="b1")])
    return f"We spoke {sum(1 for m in prompt.messages if m.role == 'user') - 1} times before."


def main(url: str | None) -> None:
    log, pending_store, ledger = stores(url)
    client = (
        ChatClient.builder(ScriptedChatModel(model))
        .default_tools(Restaurant())
        .default_advisors(SessionMemoryAdvisor(log, window=50))
        .tool_calling_advisor(ToolCallingAdvisor(nonce_ledger=ledger))
        .build()
    )
    chat = client.prompt().conversation("table-for-ada")

    print("1:", chat.user("Any free tables tonight?").call().content())
    paused = chat.user("Book one for Ada at 20:00").call().chat_client_response()
    pending = awaiting_decision(paused)
    assert pending is not None
    state_id = pending_store.save(pending)  # another process could take it from here
    print("2: waiting for a decision on", pending.awaiting_ids, "| stored events:", log.version("table-for-ada"))

    decisions = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
    print("2:", chat.resume(pending_store.take(state_id), decisions).call().content())
    print("3:", chat.user("How often did we talk?").call().content())
    roles = [e.message().role for e in log.events("table-for-ada")]
    print("log:", len(roles), "events:", " ".join(roles))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
