"""One side of the two-process test: ``pause`` stores a paused turn and prints its id; ``resume``
takes it, resumes with an allow decision and prints the answer (or the error's class name);
``replay`` resumes a copy of the state read from a file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from advisors.tool_calling import ToolCallingAdvisor
from chatclient import (
    AssistantMessage,
    ChatClient,
    PendingStateError,
    ToolCallDecision,
    ToolCallDecisions,
    ToolResponseMessage,
    tool,
)
from chatclient.memory import SessionMemoryAdvisor
from chatclient.prompt import Prompt
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools.confirmation import PendingToolCalls, awaiting_decision


class Booking:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str) -> str:
        with self.marker.open("a") as out:  # every run of the tool leaves a line, in any process
            out.write(f"booked {name}\n")
        return f"Booked {name}"


def reply(prompt: Prompt) -> AssistantMessage | str:
    if isinstance(prompt.messages[-1], ToolResponseMessage):
        return "Booked for Ada."
    return AssistantMessage(tool_calls=[tool_call("book", {"name": "Ada"}, id="b1")])


def backends(backend: str, url: str, prefix: str) -> tuple[Any, Any, Any]:
    if backend == "redis":
        from chatclient.memory.redis import RedisSessionRepository
        from chatclient.pending.redis import RedisNonceLedger, RedisPendingToolCallStore

        return (
            RedisPendingToolCallStore(url, prefix=prefix),
            RedisNonceLedger(url, prefix=prefix),
            RedisSessionRepository(url, prefix=prefix),
        )
    from chatclient.memory.postgres import PostgresSessionRepository
    from chatclient.pending.postgres import PostgresNonceLedger, PostgresPendingToolCallStore

    return (
        PostgresPendingToolCallStore(url, prefix=prefix),
        PostgresNonceLedger(url, prefix=prefix),
        PostgresSessionRepository(url, prefix=prefix),
    )


def client_with(marker: str, repository: Any, ledger: Any) -> ChatClient:
    """The worker's client: the booking tool, session memory on ``repository``, nonces in ``ledger``."""
    return (
        ChatClient.builder(ScriptedChatModel(reply))
        .default_tools(Booking(Path(marker)))
        .default_advisors(SessionMemoryAdvisor(repository))
        .tool_calling_advisor(ToolCallingAdvisor(nonce_ledger=ledger))
        .build()
    )


def main(role: str, backend: str, url: str, prefix: str, marker: str, state_id: str = "") -> None:
    store, ledger, repository = backends(backend, url, prefix)
    client = client_with(marker, repository, ledger)
    if role == "pause":
        response = client.prompt("Book a table for Ada").conversation("conv-1").call().chat_client_response()
        pending = awaiting_decision(response)
        assert pending is not None
        sys.stdout.write(store.save(pending))
        return
    try:
        if role == "replay":  # a copy of the state kept aside: only the shared nonce ledger stops it
            pending = PendingToolCalls.model_validate_json(Path(state_id).read_text())
        else:
            pending = store.take(state_id)
        decisions = ToolCallDecisions.of(ToolCallDecision.allow("b1"))
        answer = client.prompt().conversation("conv-1").resume(pending, decisions).call().content()
    except PendingStateError as exc:
        sys.stdout.write(type(exc).__name__)
        return
    sys.stdout.write(answer or "")


if __name__ == "__main__":
    main(*sys.argv[1:])
