"""The async side of the two-process test, over Redis: ``pause`` stores a paused turn in the async
store and prints its id; ``resume`` resumes it with ``resume_from(async_store, ...)`` through
``acall`` (or ``astream`` with role ``resume-stream``) and prints the answer or the error's class
name. Every store, ledger and repository is the async face, opened on this process's loop."""

from __future__ import annotations

import asyncio
import sys

from chatclient import PendingStateError, ToolCallDecision, ToolCallDecisions
from chatclient.memory.redis import AsyncRedisSessionRepository
from chatclient.pending.redis import AsyncRedisNonceLedger, AsyncRedisPendingToolCallStore
from chatclient.tools.confirmation import awaiting_decision
from tests.memory.two_process_worker import client_with


async def main(role: str, url: str, prefix: str, marker: str, state_id: str = "") -> None:
    store = AsyncRedisPendingToolCallStore(url, prefix=prefix)
    ledger = AsyncRedisNonceLedger(url, prefix=prefix)
    repository = AsyncRedisSessionRepository(url, prefix=prefix)
    client = client_with(marker, repository, ledger)
    try:
        if role == "pause":
            response = await client.prompt("Book a table for Ada").conversation("conv-1").acall().chat_client_response()
            pending = awaiting_decision(response)
            assert pending is not None
            sys.stdout.write(await store.save(pending))
            return
        spec = (
            client.prompt()
            .conversation("conv-1")
            .resume_from(store, state_id, ToolCallDecisions.of(ToolCallDecision.allow("b1")))
        )
        try:
            if role == "resume-stream":
                answer = "".join([text async for text in spec.astream().content()])
            else:
                answer = await spec.acall().content() or ""
        except PendingStateError as exc:
            answer = type(exc).__name__
        sys.stdout.write(answer)
    finally:
        for resource in (store, ledger, repository):
            await resource.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
