"""A turn whose caller is cancelled while the advisor writes it is still stored, whole and once
(the model answered and the tools ran), and the cancellation reaches the caller after the write."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from chatclient import AssistantMessage, ChatClient, tool
from chatclient.memory import AsyncInMemorySessionRepository, SessionMemoryAdvisor
from chatclient.memory.log import AppendResult, NewEvent
from chatclient.testing import ScriptedChatModel, tool_call


class HeldWrite:
    """The async repository, holding each append until the test lets it go (then failing, if told)."""

    def __init__(self, fail: bool = False) -> None:
        self.inner = AsyncInMemorySessionRepository()
        self.writing, self.go_on, self.fail = asyncio.Event(), asyncio.Event(), fail

    async def append(
        self, session_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> AppendResult:
        self.writing.set()
        await self.go_on.wait()
        if self.fail:
            raise ConnectionError("the store went away")
        return await self.inner.append(session_id, events, expected_version=expected_version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Weather:
    def __init__(self) -> None:
        self.calls = 0

    @tool(description="Get the weather of a city")
    def weather(self, city: str) -> str:
        self.calls += 1
        return f"Sunny in {city}"


@pytest.mark.parametrize("mode", ["acall", "astream"])
async def test_a_turn_cancelled_during_its_write_is_stored_whole_once(mode: str) -> None:
    repository = HeldWrite()
    tools = Weather()
    model = ScriptedChatModel([AssistantMessage(tool_calls=[tool_call("weather", {"city": "Oslo"})]), "Sunny."])
    client = ChatClient.builder(model).default_tools(tools).default_advisors(SessionMemoryAdvisor(repository)).build()
    spec = client.prompt("Weather in Oslo?").conversation("c1")

    async def turn() -> None:
        if mode == "acall":
            await spec.acall().content()
        else:
            async for _ in spec.astream().events():
                pass

    task = asyncio.ensure_future(turn())
    await repository.writing.wait()
    task.cancel()
    await asyncio.sleep(0)  # the cancellation is delivered while the append is held
    repository.go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    log = await repository.inner.events("c1")
    assert [e.message().role for e in log if e.type == "message"] == ["user", "assistant", "tool", "assistant"]
    assert len({e.event_id for e in log}) == len(log) and tools.calls == 1


async def test_a_write_failing_after_the_cancellation_is_logged_and_the_cancellation_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    repository = HeldWrite(fail=True)
    client = ChatClient.builder(ScriptedChatModel(["Hi."])).default_advisors(SessionMemoryAdvisor(repository)).build()
    task = asyncio.ensure_future(client.prompt("Hello").conversation("c1").acall().content())
    await repository.writing.wait()
    task.cancel()
    await asyncio.sleep(0)
    repository.go_on.set()
    with caplog.at_level(logging.WARNING, logger="chatclient.memory"), pytest.raises(asyncio.CancelledError) as raised:
        await task
    chain: list[BaseException] = []
    error: BaseException | None = raised.value  # the task may wrap the cancellation it re-raises
    while error is not None and len(chain) < 10:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(e, ConnectionError) for e in chain)
    assert "write failed after its caller was cancelled" in caplog.text
