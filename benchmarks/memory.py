"""What conversation memory costs per turn: ``python -m benchmarks.memory [--redis URL] [--postgres URL]``.

One plain turn (OpenAI Chat Completions over the in-process mock transport) with and without
``SessionMemoryAdvisor`` (a 20-turn conversation, a 40-event window: the last 20 turns), then the
cost of a turn as the stored conversation grows from 10 to 1,000 turns with the same window. The
variants run interleaved, round after round, so drift on a shared machine hits them alike; medians.

``--instructions``: the same turns counted in instructions instead (deterministic where timings on a
shared machine are not): each store's turn runs under valgrind's callgrind (``callgrind_control``),
instrumentation on only around the counted turns after a warm-up of 50; the figure is the difference
of 250 and 50 counted turns over 200 (user space only: SQLite's writes to the WAL are in the kernel,
so the WAL bytes each SQLite turn adds are printed beside it). To compare another checkout, run this
file with ``PYTHONPATH=<that checkout>``.

``--parts``: the pieces of the store work in a memory turn, timed alone (interleaved, medians): each
store's windowed read and its append of a new turn (two messages and the usage event, prebuilt), and
SQLite's ``PRAGMA data_version`` alone (the read's one statement).

``--opcodes STORE``: where a store's turn spends its Python beyond the baseline's: bytecodes executed
per turn by each function (``sys.settrace``), the store's turn minus the turn with the history by hand.

``--kernel``: what each counted turn asks of the kernel, which the instruction count leaves out (``perf
stat``, root: page-cache pages added, pages allocated, ``pwrite64``/``fcntl``/``futex`` calls, context
switches; difference of 1,200 and 200 turns over 1,000). ``--gc``: garbage collections per turn by
generation and their µs (``gc.callbacks``), interleaved.

Every SQLite store has its WAL cycled once before any turn is timed or counted (800 turns appended to
another conversation of the same file, past the first restart): a new file's first ~500 turns land
on pages the WAL has never used, which the kernel allocates and zeroes; a running store rewrites the
WAL's first pages from then on. What those first turns cost is in the results file (``--kernel``).
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
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


WAL_WARM_UP = 800
"""Turns appended to another conversation of a SQLite store before it is measured: past the fourth
checkpoint (every 200 commits), which restarts the WAL (past 2,000 frames, ≈ 500 turns; SQLite's
own checkpoint: every 1,000 WAL pages), so the WAL has started over."""


def settle(repository: Any) -> Any:
    """``repository``, with its SQLite WAL cycled once (see :data:`WAL_WARM_UP`); other stores as they are."""
    database = getattr(repository, "_db", None)
    if database is None or not hasattr(database, "checkpointer"):
        return repository
    prefill(repository, "wal-warm-up", WAL_WARM_UP)
    if database.checkpointer is not None and not database.checkpointer.wait_for(4, timeout=60):
        raise RuntimeError("the SQLite checkpoint thread did not run")
    prefill(repository, "wal-warm-up-2", 2)  # the first commit after the checkpoint starts the WAL over
    return repository


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


COUNTED = ("no memory", "in-memory", "SQLite")


def counted_turn(series: str) -> Callable[[], None]:
    """One of the turns ``--instructions`` counts, warm: the baseline or a store's memory turn."""
    model = make_model("openai", MockBackend("openai"))
    if series == "no memory":
        history = InMemorySessionRepository()
        prefill(history, "by-hand", 20)
        return turn_op(ChatClient.create(model), None, [e.message() for e in history.events("by-hand", last=WINDOW)])
    repository = settle(repositories(None, None)[series]())
    prefill(repository, "c", 20)
    return turn_op(
        ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build(), "c"
    )


def _count_child(series: str, n: int) -> None:
    """Under callgrind: warm up, then count ``n`` turns."""
    op = counted_turn(series)
    for _ in range(50):
        op()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], stdout=subprocess.DEVNULL, check=True)
    for _ in range(n):
        op()
    subprocess.run(["callgrind_control", "-i", "off", pid], stdout=subprocess.DEVNULL, check=True)


def _instructions(series: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                   sys.executable, "-m", "benchmarks.memory", "--count-child", series, str(n)]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for path in glob.glob(out + "*"):  # one file per thread part
            with open(path) as file:
                total += sum(int(line.split()[1]) for line in file if line.startswith("totals:"))
        return total


def wal_bytes_per_turn(turns: int = 200) -> float:
    """The bytes a warm SQLite memory turn adds to the WAL (checkpoints held off while counting)."""
    from chatclient.memory.sqlite import SqliteSessionRepository

    path = Path(tempfile.mkdtemp()) / "wal.db"
    repository = SqliteSessionRepository(path, checkpoint_every=10**9)
    prefill(repository, "c", 20)
    model = make_model("openai", MockBackend("openai"))
    op = turn_op(
        ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build(), "c"
    )
    for _ in range(20):
        op()
    wal = Path(f"{path}-wal")
    before = wal.stat().st_size
    for _ in range(turns):
        op()
    return (wal.stat().st_size - before) / turns


def count_instructions() -> None:
    print("| turn | instructions per turn | × no memory |\n|---|---|---|")  # noqa: RUF001
    base = 0.0
    for series in COUNTED:
        per_turn = (_instructions(series, 250) - _instructions(series, 50)) / 200
        base = base or per_turn
        print(f"| {series} | {per_turn / 1e3:,.1f} k | {per_turn / base:.3f}× |", flush=True)  # noqa: RUF001
    print(f"\nSQLite: {wal_bytes_per_turn():,.0f} WAL bytes per turn (4,096-byte pages, 24-byte frame headers)")


KERNEL_EVENTS = {
    "filemap:mm_filemap_add_to_page_cache": "page-cache pages added",
    "kmem:mm_page_alloc": "pages allocated",
    "syscalls:sys_enter_pwrite64": "pwrite64",
    "syscalls:sys_enter_fcntl": "fcntl",
    "syscalls:sys_enter_futex": "futex",
    "context-switches": "context switches",
    "page-faults": "page faults",
}


def _run_child(series: str, n: int) -> None:
    op = counted_turn(series)
    for _ in range(50):
        op()
    for _ in range(n):
        op()


def _kernel_counts(series: str, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "perf.csv")
        command = ["perf", "stat", "-x,", "-e", ",".join(KERNEL_EVENTS), "-o", out,
                   sys.executable, "-m", "benchmarks.memory", "--run-child", series, str(n)]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as file:
            rows = [line.split(",") for line in file if line[:1].isdigit()]
        return {row[2]: float(row[0]) for row in rows}


def count_kernel() -> None:
    print("| turn | " + " | ".join(KERNEL_EVENTS.values()) + " |\n|---|" + "---|" * len(KERNEL_EVENTS))
    for series in COUNTED:
        few, many = _kernel_counts(series, 200), _kernel_counts(series, 1200)
        cells = [f"{(many.get(e, 0) - few.get(e, 0)) / 1000:.2f}" for e in KERNEL_EVENTS]
        print(f"| {series} | " + " | ".join(cells) + " |", flush=True)


def count_collections(*, rounds: int, per_round: int) -> None:
    import gc

    ops = {series: counted_turn(series) for series in COUNTED}
    for op in ops.values():
        for _ in range(50):
            op()
    current: list[str | None] = [None]
    started = [0]
    counts = {series: [0, 0, 0] for series in ops}
    spent = {series: [0, 0, 0] for series in ops}

    def observe(phase: str, info: dict[str, int]) -> None:
        series = current[0]
        if series is None:
            return
        if phase == "start":
            started[0] = time.perf_counter_ns()
            return
        counts[series][info["generation"]] += 1
        spent[series][info["generation"]] += time.perf_counter_ns() - started[0]

    gc.callbacks.append(observe)
    for _ in range(rounds):
        for series, op in ops.items():
            current[0] = series
            for _ in range(per_round):
                op()
            current[0] = None
    gc.callbacks.remove(observe)
    turns = rounds * per_round
    print(f"tracked objects: {len(gc.get_objects()):,}, thresholds {gc.get_threshold()}\n")
    print("| turn | collections per turn (gen 0 / 1 / 2) | µs per turn in them (gen 0 / 1 / 2) |\n|---|---|---|")
    for series in ops:
        n, us = counts[series], spent[series]
        print(
            f"| {series} | {n[0] / turns:.3f} / {n[1] / turns:.3f} / {n[2] / turns:.4f}"
            f" | {us[0] / turns / 1e3:.2f} / {us[1] / turns / 1e3:.2f} / {us[2] / turns / 1e3:.2f} |"
        )


def _opcodes(series: str, turns: int = 10) -> Counter[str]:
    op = counted_turn(series)
    for _ in range(30):
        op()
    counts: Counter[str] = Counter()

    def trace(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        name = f"{code.co_filename.split('site-packages/')[-1].split('chatclient/')[-1]}:{code.co_name}"

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[name] += 1
            return local

        return local

    sys.settrace(trace)
    for _ in range(turns):
        op()
    sys.settrace(None)
    return counts


def count_opcodes(series: str) -> None:
    base, store = _opcodes("no memory"), _opcodes(series)
    extra = {name: (store[name] - base[name]) / 10 for name in base.keys() | store.keys()}
    print(
        f"{series}: {sum(store.values()) / 10:,.0f} bytecodes per turn, the baseline {sum(base.values()) / 10:,.0f}\n"
    )
    print("| function | bytecodes per turn beyond the baseline |\n|---|---|")
    for name, n in sorted(extra.items(), key=lambda item: -abs(item[1])):
        if abs(n) >= 5:
            print(f"| {name} | {n:+.0f} |")


def _call(function: Callable[..., object], *args: Any, **kwargs: Any) -> Callable[[], None]:
    def op() -> None:
        function(*args, **kwargs)

    return op


def store_parts(*, rounds: int, per_round: int) -> None:
    from chatclient.memory import NewEvent
    from chatclient.memory.sqlite import SqliteSessionRepository

    usage = '{"completion_tokens": 8, "model": "gpt-4o-mini", "prompt_tokens": 60}'
    prebuilt = [
        [
            *turn_events(f"part-{n}", [UserMessage(PROMPT), AssistantMessage("The capital of France is Paris.")]),
            NewEvent(f"part-{n}:usage", f"part-{n}", usage, "usage"),
        ]
        for n in range(2 * (20 + rounds * per_round) + 10)
    ]
    turns = iter(prebuilt)  # built before the clock runs: the appends alone are timed
    ops: dict[str, Callable[[], None]] = {}
    sqlite = settle(SqliteSessionRepository(Path(tempfile.mkdtemp()) / "parts.db"))
    for name, repository in (("in-memory", InMemorySessionRepository()), ("SQLite", sqlite)):
        prefill(repository, "c", 20)
        repository.events("c", last=2 * WINDOW)
        ops[f"{name}: read (last {2 * WINDOW} events)"] = _call(repository.events, "c", last=2 * WINDOW)
        ops[f"{name}: append a new turn (3 events)"] = _call(lambda r=repository: r.append("c", next(turns)))
    ops["SQLite: PRAGMA data_version (the stamp) alone"] = _call(sqlite._db.stamp)
    print("| piece | µs (median) | mean µs |\n|---|---|---|")
    for name, (median, mean) in measure_both(ops, rounds=rounds, per_round=per_round).items():
        print(f"| {name} | {median:.1f} | {mean:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--redis")
    parser.add_argument("--postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=40)
    parser.add_argument("--instructions", action="store_true", help="count instructions per turn (callgrind)")
    parser.add_argument("--opcodes", choices=COUNTED[1:], help="bytecodes per function beyond the baseline")
    parser.add_argument("--parts", action="store_true", help="time the store's pieces of a turn alone")
    parser.add_argument("--kernel", action="store_true", help="count what each turn asks of the kernel (perf stat)")
    parser.add_argument("--gc", action="store_true", help="count garbage collections per turn")
    parser.add_argument("--count-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--run-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.opcodes:
        count_opcodes(args.opcodes)
        return
    if args.parts:
        store_parts(rounds=args.rounds, per_round=args.per_round)
        return
    if args.run_child:
        _run_child(args.run_child[0], int(args.run_child[1]))
        return
    if args.kernel:
        count_kernel()
        return
    if args.gc:
        count_collections(rounds=args.rounds, per_round=args.per_round)
        return
    if args.count_child:
        _count_child(args.count_child[0], int(args.count_child[1]))
        return
    if args.instructions:
        count_instructions()
        return
    model = make_model("openai", MockBackend("openai"))
    made = repositories(args.redis, args.postgres)

    history = InMemorySessionRepository()
    prefill(history, "by-hand", 20)
    by_hand = [e.message() for e in history.events("by-hand", last=WINDOW)]
    ops = {"no memory, the same history passed by hand": turn_op(ChatClient.create(model), None, by_hand)}
    for name, make in made.items():
        repository = settle(make())
        conversation = f"c-{uuid.uuid4().hex}"
        prefill(repository, conversation, 20)
        client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build()
        ops[name] = turn_op(client, conversation)
    # The same SQLite turn with compaction on (the view then starts at the latest boundary: one more read).
    from chatclient.memory.sqlite import SqliteSessionRepository

    compacted = settle(SqliteSessionRepository(Path(tempfile.mkdtemp()) / "compacted.db"))
    prefill(compacted, "c-compacted", 20)
    memory = SessionMemoryAdvisor(compacted, window=WINDOW, compaction=Compaction(TurnCount(20), TurnWindow(10)))
    ops["SQLite + compaction (TurnCount(20), TurnWindow(10))"] = turn_op(
        ChatClient.builder(model).default_advisors(memory).build(), "c-compacted"
    )
    # The same SQLite turn with SQLite's own WAL checkpoint, run by the request that crosses its threshold.
    inline = settle(SqliteSessionRepository(Path(tempfile.mkdtemp()) / "inline.db", checkpoint_every=None))
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
            repository = settle(make())
            conversation = f"g-{uuid.uuid4().hex}"
            prefill(repository, conversation, size)
            client = ChatClient.builder(model).default_advisors(SessionMemoryAdvisor(repository, window=WINDOW)).build()
            grown[str(size)] = turn_op(client, conversation)
        costs = measure(grown, rounds=args.rounds, per_round=args.per_round // 2)
        print(f"| {name} | " + " | ".join(f"{costs[str(n)]:.0f}" for n in sizes) + " |")


if __name__ == "__main__":
    main()
