"""Usage summed over many calls (the client's running total), and cost from a user's price table."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import pytest
from pydantic import BaseModel

from chatclient import (
    AssistantMessage,
    ChatClient,
    ConfigurationError,
    ToolCallDecision,
    ToolCallDecisions,
    tool,
)
from chatclient._sync import run_sync
from chatclient.errors import UnknownModelPriceError
from chatclient.model import ChatModel
from chatclient.pending.state import InMemoryPendingToolCallStore
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse, Usage
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import awaiting_decision
from chatclient.usage import ModelPrice, PriceTable, UsageTotals, UsageTracker, cost_of, usage_minus

ROUND = Usage(prompt_tokens=10, completion_tokens=5, cache_read_tokens=2, reasoning_tokens=1)


def times(n: int) -> Usage:
    total = Usage()
    for _ in range(n):
        total += ROUND
    return total


class Tools:
    def __init__(self) -> None:
        self.runs = 0

    @tool(description="Look a city up")
    def lookup(self, name: str) -> str:
        self.runs += 1
        return f"{name}: big"

    @tool(description="Book a table", requires_confirmation=True)
    def book(self, name: str) -> str:
        self.runs += 1
        return f"booked {name}"


def calls(name: str) -> AssistantMessage:
    return AssistantMessage(None, tool_calls=[tool_call(name, {"name": "Ada"})])


# ---------------------------------------------------------------- the client's running total


@pytest.mark.parametrize("mode", MODES)
def test_the_client_sums_every_turn_in_every_mode(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel([calls("lookup"), "first", "second"], usage=ROUND, model="m1")
    client = ChatClient.builder(model).default_tools(tools).build()
    assert client.usage == UsageTotals()
    run_spec(mode, client.prompt("one"))  # two rounds
    run_spec(mode, client.prompt("two"))
    totals = client.usage
    assert totals.total == times(3) and totals.calls == 2 and totals.by_model == {"m1": times(3)}


@pytest.mark.parametrize("mode", MODES)
def test_a_paused_and_resumed_turn_counts_each_round_once(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel([calls("lookup"), calls("book"), "done"], usage=ROUND)
    client = ChatClient.builder(model).default_tools(tools).build()
    paused, _ = run_spec(mode, client.prompt("Book it"))
    pending = awaiting_decision(paused)
    assert pending is not None and client.usage.total == times(2)
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
    assert resumed.chat_response is not None and resumed.chat_response.usage == times(3), "the turn's own total"
    assert client.usage.total == times(3) and client.usage.calls == 2, "the client adds only the resumed round"


def test_a_stored_resume_counts_once_too() -> None:
    tools = Tools()
    model = ScriptedChatModel([calls("book"), "done"], usage=ROUND)
    client = ChatClient.builder(model).default_tools(tools).build()
    store = InMemoryPendingToolCallStore()
    pending = awaiting_decision(client.prompt("Book it").call().chat_client_response())
    assert pending is not None
    state_id = store.save(pending)
    decisions = ToolCallDecisions.of(ToolCallDecision.allow(pending.calls[0].id))
    client.prompt().resume_from(store, state_id, decisions).call().content()
    assert client.usage.total == times(2) and tools.runs == 1


def test_entity_retries_are_counted_and_a_failed_call_counts_nothing() -> None:
    class City(BaseModel):
        name: str

    model = ScriptedChatModel(["{}", '{"name": "Oslo"}', RuntimeError("down")], usage=ROUND)
    client = ChatClient.create(model)
    assert client.prompt("A city").call().entity(City, retries=1).name == "Oslo"
    assert client.usage.total == times(2) and client.usage.calls == 1
    with pytest.raises(RuntimeError):
        client.prompt("again").call().content()
    assert client.usage.calls == 1


def test_a_reply_without_usage_is_a_call_with_no_tokens_and_reset_starts_again() -> None:
    client = ChatClient.create(ScriptedChatModel(["a", "b"]))
    client.prompt("x").call().content()
    assert client.usage.calls == 1 and client.usage.total == Usage() and client.usage.by_model == {}
    before = client.reset_usage()
    assert before.calls == 1 and client.usage == UsageTotals()
    assert client.mutate().build().usage == UsageTotals(), "a derived client keeps its own total"


class GatedModel(ChatModel):
    """Every call waits until ``parties`` calls are in flight at once, then answers."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=60)  # a bound against a hang, not a timing
        self.parties = parties
        self.entered = 0
        self.all_in: asyncio.Event | None = None

    def call(self, prompt: Prompt) -> ChatResponse:
        self.barrier.wait()
        return ChatResponse.of("ok", usage=ROUND, model="gated")

    async def acall(self, prompt: Prompt) -> ChatResponse:
        assert self.all_in is not None
        self.entered += 1
        if self.entered == self.parties:
            self.all_in.set()
        await asyncio.wait_for(self.all_in.wait(), 60)
        return ChatResponse.of("ok", usage=ROUND, model="gated")


def test_threads_calling_at_once_are_all_counted() -> None:
    parties = 8
    client = ChatClient.create(GatedModel(parties))
    threads = [threading.Thread(target=lambda: client.prompt("x").call().content()) for _ in range(parties)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert client.usage.calls == parties and client.usage.total == times(parties)


def test_tasks_calling_at_once_are_all_counted() -> None:
    parties = 16
    model = GatedModel(parties)
    client = ChatClient.create(model)

    async def main() -> None:
        model.all_in = asyncio.Event()
        await asyncio.gather(*(client.prompt("x").acall().content() for _ in range(parties)))

    run_sync(main)
    assert model.entered == parties and client.usage.calls == parties and client.usage.total == times(parties)


def test_the_tracker_loses_no_update_under_contention() -> None:
    tracker = UsageTracker()
    parties, each = 8, 5000
    start = threading.Barrier(parties, timeout=60)

    def work(model: str) -> None:
        start.wait()
        for _ in range(each):
            tracker.add(ROUND, model)

    threads = [threading.Thread(target=work, args=(f"m{i % 2}",)) for i in range(parties)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    totals = tracker.totals()
    assert totals.calls == parties * each
    assert totals.total.prompt_tokens == 10 * parties * each and set(totals.by_model) == {"m0", "m1"}


def test_usage_minus_never_goes_below_zero() -> None:
    assert usage_minus(times(3), times(1)) == times(2)
    assert usage_minus(times(1), times(3)) == Usage()
    assert usage_minus(ROUND, None) == ROUND


# ---------------------------------------------------------------- prices


def test_a_price_is_per_million_tokens_in_exact_decimals() -> None:
    price = ModelPrice(input="0.15", output=0.6)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert price.cost(usage) == Decimal("0.45") and price.output == Decimal("0.6")


def test_cached_written_and_reasoning_tokens_are_each_priced_once() -> None:
    price = ModelPrice(input=1, output=2, cached_input="0.1", cache_write="1.25")
    usage = Usage(
        prompt_tokens=1000, completion_tokens=300, cache_read_tokens=400, cache_write_tokens=100, reasoning_tokens=100
    )
    # 500 fresh x 1 + 400 cached x 0.1 + 100 written x 1.25 + 200 visible x 2 + 100 reasoning x 2 (the output price)
    assert price.cost(usage) == Decimal("0.001265")
    assert ModelPrice(input=1, output=2, reasoning=4).cost(usage) == Decimal("0.0018")


def test_a_table_finds_dated_snapshots_and_refuses_unknown_models() -> None:
    table = PriceTable({"gpt-x": ModelPrice(input=1, output=2), "claude-x": {"input": "3", "output": "15"}})
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000)
    assert table.cost(usage, "gpt-x") == Decimal(3) == table(usage, "gpt-x-2025-01-31")
    assert table.cost(usage, "claude-x-20250131") == Decimal(18)
    with pytest.raises(
        UnknownModelPriceError, match=r"no price for model 'gpt-y' \(it prices: claude-x, gpt-x\)"
    ) as caught:
        table.cost(usage, "gpt-y")
    assert caught.value.model == "gpt-y" and isinstance(caught.value, LookupError)
    with pytest.raises(UnknownModelPriceError, match="named no model"):
        table.cost(usage, None)
    assert table.price_for("gpt-x-mini") is None, "a longer name is another model, not a snapshot"


@pytest.mark.parametrize("bad", ["-1", "abc", "NaN", float("inf")])
def test_a_bad_price_is_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="price"):
        ModelPrice(input=bad, output=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="price table keys"):
        PriceTable({"": ModelPrice(input=1, output=1)})


def test_the_clients_total_and_one_reply_have_a_cost() -> None:
    table = PriceTable({"m1": ModelPrice(input=1, output=2), "m2": ModelPrice(input=10, output=20)})
    client = ChatClient.create(ScriptedChatModel(["a"], usage=Usage(prompt_tokens=1_000_000), model="m1"))
    response = client.prompt("x").call().chat_client_response()
    assert cost_of(response, table) == Decimal(1)
    other = ChatClient.create(ScriptedChatModel(["b"], usage=Usage(completion_tokens=1_000_000), model="m2"))
    other.prompt("y").call().content()
    assert (client.usage + other.usage).cost(table) == Decimal(21)
    assert UsageTotals().cost(table) == Decimal(0)
    with pytest.raises(UnknownModelPriceError):
        client.usage.cost(PriceTable({}))


def test_clients_may_share_one_tracker_and_mutate_keeps_it() -> None:
    shared = UsageTracker()
    first = ChatClient.builder(ScriptedChatModel(["a"], usage=ROUND, model="m1")).usage_tracker(shared).build()
    second = ChatClient.builder(ScriptedChatModel(["b", "c"], usage=ROUND, model="m2")).usage_tracker(shared).build()
    first.prompt("x").call().content()
    second.prompt("y").call().content()
    second.mutate().default_system("Be brief").build().prompt("z").call().content()
    assert shared.totals().by_model == {"m1": ROUND, "m2": times(2)} and first.usage == second.usage
