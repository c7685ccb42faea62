"""What conversation memory costs per turn: ``python -m benchmarks.memory [--redis URL] [--postgres URL]``.

One plain turn (OpenAI Chat Completions over the in-process mock transport) with and without
``SessionMemoryAdvisor`` (a 20-turn conversation, a 40-event window: the last 20 turns), then the
cost of a turn as the stored conversation grows from 10 to 1,000 turns with the same window. The
variants run interleaved, round after round, so drift on a shared machine hits them alike; medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chatclient import AssistantMessage, ChatClient, UserMessage
from chatclient.memory import (
    Compaction,
    InMemorySessionRepository,
    SessionMemoryAdvisor,
    TurnCount,
    TurnWindow,
    turn_events,
)

from .backends import MockBackend
from .canned import PROMPT
from .libs.chatclient_lib import make_model

WINDOW = 40


def prefill(repository: Any, conversation: str, turns: int) -> None:
    for n in range(turns):
        messages = [UserMessage(f"Question {n}: {PROMPT}"), AssistantMessage("The capital of France is Paris.")]
        repository.append(conversation, turn_events(f"pre-{n}", messages))


def repositories(redis_url: str | None, postgres_url: str | None) -> dict[str, Callable[[], Any]]:
    from chatclient.memory.sqlite import SqliteSessionRepository

    folder = Path(tempfile.mkdtemp())
    made: dict[str, Callable[[], Any]] = {
        "in-memory": InMemorySessionRepository,
        "SQLite": lambda: SqliteSessionRepository(folder / f"{uuid.uuid4().hex}.db"),
    }
    prefix = f"bench_{uuid.uuid4().hex[:8]}_"
    if redis_url:
        from chatclient.memory.redis import RedisSessionRepository

        made["Redis (loopback)"] = lambda: RedisSessionRepository(redis_url, prefix=prefix)
    if postgres_url:
        from chatclient.memory.postgres import PostgresSessionRepository

        made["PostgreSQL (loopback)"] = lambda: PostgresSessionRepository(postgres_url, prefix=prefix)
    return made


def turn_op(client: ChatClient, conversation: str | None, history: Any = ()) -> Callable[[], None]:
    spec = client.prompt().messages(*history).user(PROMPT)
    if conversation is not None:
        spec = spec.conversation(conversation)

    def turn() -> None:
        spec.call().content()

    return turn


def measure(ops: dict[str, Callable[[], None]], *, rounds: int, per_round: int) -> dict[str, float]:
    return {name: median for name, (median, _) in measure_both(ops, rounds=rounds, per_round=per_round).items()}


def measure_both(ops: dict[str, Callable[[], None]], *, rounds: int, per_round: int) -> dict[str, tuple[float, float]]:
    """Median and mean µs per op (the mean shows costs only some ops pay, such as a WAL checkpoint)."""
    samples: dict[str, list[int]] = {name: [] for name in ops}
    for op in ops.values():  # warm-up
        for _ in range(20):
            op()
    for _ in range(rounds):
        for name, op in ops.items():
            for _ in range(per_round):
                started = time.perf_counter_ns()
                op()
                samples[name].append(time.perf_counter_ns() - started)
    return {name: (statistics.median(v) / 1000, statistics.fmean(v) / 1000) for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis")
    parser.add_argument("--postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=40)
    args = parser.parse_args()
    model = make_model("openai", MockBackend("openai"))
    made = repositories(args.redis, args.postgres)

    history = InMemorySessionRepository()
    prefill(history, "by-hand", 20)
    by_hand = [e.message() for e in history.events("by-hand", last=WINDOW)]
    ops = {"no memory, the same history passed by hand": turn_op(ChatClient.create(model), None, by_hand)}
    for name, make in made.items():
        repository = make()
        conversation = f"c-{uuid.uuid4().hex}"
        prefill(repository, conversation, 20)
        client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build()
        ops[name] = turn_op(client, conversation)
    # The same SQLite turn with compaction on (the view then starts at the latest boundary: one more read).
    from chatclient.memory.sqlite import SqliteSessionRepository

    compacted = SqliteSessionRepository(Path(tempfile.mkdtemp()) / "compacted.db")
    prefill(compacted, "c-compacted", 20)
    memory = SessionMemoryAdvisor(compacted, window=WINDOW, compaction=Compaction(TurnCount(20), TurnWindow(10)))
    ops["SQLite + compaction (TurnCount(20), TurnWindow(10))"] = turn_op(
        ChatClient.builder(model).default_advisors(memory).build(), "c-compacted"
    )
    # The same SQLite turn with SQLite's own WAL checkpoint, run by the request that crosses its threshold.
    inline = SqliteSessionRepository(Path(tempfile.mkdtemp()) / "inline.db", checkpoint_every=None)
    prefill(inline, "c-inline", 20)
    ops["SQLite, checkpoint in the request (checkpoint_every=None)"] = turn_op(
        ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(inline, window=WINDOW)).build(), "c-inline"
    )
    result = measure_both(ops, rounds=args.rounds, per_round=args.per_round)
    base, base_mean = next(iter(result.values()))
    print(f"### A turn with SessionMemoryAdvisor (20-turn conversation, {WINDOW}-event window), µs per turn\n")
    print("| store | µs per turn (median) | × no memory | mean µs | × no memory (means) |")  # noqa: RUF001
    print("|---|---|---|---|---|")
    for name, (us, mean) in result.items():
        print(f"| {name} | {us:.0f} | {us / base:.2f}× | {mean:.0f} | {mean / base_mean:.2f}× |")  # noqa: RUF001

    print(f"\n### Cost per turn as the conversation grows ({WINDOW}-event window), µs per turn\n")
    sizes = (10, 100, 1000)
    print("| store | " + " | ".join(f"{n} turns" for n in sizes) + " |\n|---|" + "---|" * len(sizes))
    for name, make in made.items():
        grown: dict[str, Callable[[], None]] = {}
        for size in sizes:
            repository = make()
            conversation = f"g-{uuid.uuid4().hex}"
            prefill(repository, conversation, size)
            client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build()
            grown[str(size)] = turn_op(client, conversation)
        costs = measure(grown, rounds=args.rounds, per_round=args.per_round // 2)
        print(f"| {name} | " + " | ".join(f"{costs[str(n)]:.0f}" for n in sizes) + " |")


if __name__ == "__main__":
    main()
