"""Durable turns under several processes, crashes and failures, on one shared store.

A coordinator drives ``turns`` turns through ``workers`` worker processes (this module run as
``python -m benchmarks.durable_soak worker ...``; one JSON line in, one out). Each turn pauses on a
gated ``book`` call in one worker and is resumed in another (turns move between workers); the
pending store and the conversations' memory live on one backend (SQLite file, PostgreSQL, Redis)
that every worker shares. Faults are planned per turn, not timed: a worker SIGKILLs itself inside
the tool (started, outcome unknown) or inside the model round after it (results recorded), the model
round after the tool fails with a 5xx, or two workers are sent the same resume at once.

What is checked afterwards (:func:`check`): every turn completed once and is stored once, whole, in
its conversation; no gated tool ran twice or without an allow; every tool-call message is followed by
its results; no state was redeemed twice (one "done" per turn, every state gone from the store).

The ``memory`` scenario (``--scenario memory``) has no pending store: an ungated ``charge`` runs in
the turn's first request, and the conversation's turn journal (beside its log) is all that survives
a failure. A worker dies inside the tool (the journal stays ``running``: the next worker takes the
turn over ``after_crash``, the charge reported as of unknown outcome) or in the model round after it
(results recorded), or that round fails with a 5xx; the turn is then finished by another worker from
``memory.unfinished_turn(conversation)`` alone, raced by two workers for some turns. Checked as
above, and every journal is cleared.

``python -m benchmarks.durable_soak --backend sqlite --workers 4 --turns 200`` prints turns/s and
the p99 of a turn's latency (pause to answer, retries included); timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BACKENDS = ("sqlite", "postgres", "redis")
_ROOT = str(Path(__file__).resolve().parents[1])
UNKNOWN = "outcome is unknown"


# ---------------------------------------------------------------------------------------- the worker


def _stores(backend: str, where: str, prefix: str) -> tuple[Any, Any]:
    """The pending store and the session repository every worker shares."""
    if backend == "sqlite":
        from chatclient.memory.sqlite import SqliteSessionRepository
        from chatclient.pending.state import SqlitePendingToolCallStore

        path = Path(where) / "soak.db"
        return SqlitePendingToolCallStore(path, prefix=prefix), SqliteSessionRepository(path, prefix=prefix)
    if backend == "postgres":
        from chatclient.memory.postgres import PostgresSessionRepository
        from chatclient.pending.postgres import PostgresPendingToolCallStore

        return PostgresPendingToolCallStore(where, prefix=prefix), PostgresSessionRepository(where, prefix=prefix)
    from chatclient.memory.redis import RedisSessionRepository
    from chatclient.pending.redis import RedisPendingToolCallStore

    return RedisPendingToolCallStore(where, prefix=prefix), RedisSessionRepository(where, prefix=prefix)


class _Worker:
    def __init__(self, backend: str, where: str, prefix: str, ledger: str, journal: bool) -> None:
        from chatclient import ChatClient, tool
        from chatclient.memory import SessionMemoryAdvisor
        from chatclient.testing import ScriptedChatModel

        self.store, repository = _stores(backend, where, prefix)
        self.memory = SessionMemoryAdvisor(repository)
        if not journal:
            self.store = _Unjournaled(self.store)
        self.ledger = ledger
        self.task: dict[str, Any] = {}
        worker = self

        @tool(requires_confirmation=True)
        def book(turn: str) -> str:
            """Book for a turn."""
            return worker.act("booked", turn)

        @tool
        def charge(turn: str) -> str:
            """Charge for a turn (ungated: the memory scenario)."""
            return worker.act("charged", turn)

        self.tools = (book,)
        self.charge = charge
        self.client = ChatClient.builder(ScriptedChatModel(self.reply)).default_advisors(self.memory).build()

    def act(self, did: str, turn: str) -> str:
        """A tool's side effect, noted when it starts and when it ends (unless the plan kills us between)."""
        self.note("start", turn)
        if self.task.get("die") == "tool":
            os.kill(os.getpid(), signal.SIGKILL)  # started, outcome unknown
        self.note("done", turn)
        return f"{did} {turn}"

    def note(self, what: str, turn: str) -> None:
        """One line per tool start and end, appended atomically (O_APPEND, one write)."""
        line = json.dumps({"what": what, "turn": turn, "pid": os.getpid(), "allowed": self.task.get("allow")})
        fd = os.open(self.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    def reply(self, prompt: Any) -> Any:
        """The scripted model: ask to book, then answer with what the tool said."""
        from chatclient import AssistantMessage
        from chatclient.errors import ServerError
        from chatclient.messages import ToolResponseMessage
        from chatclient.testing import tool_call

        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            if self.task.get("die") == "model":
                os.kill(os.getpid(), signal.SIGKILL)  # the results were recorded before this round
            if self.task.get("fail"):
                raise ServerError("503 after the retries", status=503)
            return f"done: {last.responses[0].response_data}"
        turn = self.task["turn"]
        name = "charge" if self.task["op"].startswith("memory") else "book"
        return AssistantMessage(None, tool_calls=[tool_call(name, {"turn": turn}, id=f"b-{turn}")])

    def run(self, task: dict[str, Any]) -> dict[str, Any]:
        from chatclient import ToolCallDecision, ToolCallDecisions
        from chatclient.tools.confirmation import awaiting_decision

        self.task = task
        turn = task["turn"]
        try:
            if task["op"].startswith("memory"):
                return self.run_memory(task)
            if task["op"] == "start":
                response = self.client.prompt(f"book {turn}").tools(*self.tools).conversation(turn).call()
                pending = awaiting_decision(response.chat_client_response())
                assert pending is not None
                return {"state": self.store.save(pending)}
            call_id = f"b-{turn}"
            decision = ToolCallDecision.allow(call_id) if task["allow"] else ToolCallDecision.deny(call_id)
            spec = self.client.prompt().tools(*self.tools)
            spec = spec.resume_from(
                self.store, task["state"], ToolCallDecisions.of(decision), after_crash=task["crash"]
            )
            return {"done": spec.call().content()}
        except Exception as exc:  # reported to the coordinator, which decides what comes next
            return {"error": type(exc).__name__, "message": str(exc)[:300]}

    def run_memory(self, task: dict[str, Any]) -> dict[str, Any]:
        """A memory-backed turn with no pending store: started, or finished from its journal alone."""
        turn = task["turn"]
        if task["op"] == "memory-start":
            return {"done": self.client.prompt(f"charge {turn}").tools(self.charge).conversation(turn).call().content()}
        continuation = self.memory.unfinished_turn(turn, after_crash=task["crash"])
        if continuation is None:
            return {"none": True}  # nothing unfinished: another worker completed it
        return {"done": self.client.prompt().tools(self.charge).continue_turn(continuation).call().content()}


class _Unjournaled:
    """A store seen without its journal: a resume takes the state before its calls run."""

    def __init__(self, store: Any) -> None:
        self.save, self.peek, self.take = store.save, store.peek, store.take


def _worker_main(backend: str, where: str, prefix: str, ledger: str, journal: bool) -> None:
    worker = _Worker(backend, where, prefix, ledger, journal)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        print(json.dumps(worker.run(json.loads(line))), flush=True)


# ---------------------------------------------------------------------------------------- the coordinator


class _Process:
    """One worker process; :meth:`call` sends a task and reads its answer, ``None`` if it died."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.durable_soak", "worker", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))},
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("a soak worker did not start")

    def call(self, task: dict[str, Any]) -> dict[str, Any] | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Let it end (a dead one has ended), and close its pipes."""
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        with suppress(BrokenPipeError):  # it died with a line unread
            proc.stdin.close()
        proc.wait()
        proc.stdout.close()


@dataclass
class Plan:
    """What happens to one turn (decided up front from its number: the run is reproducible)."""

    turn: str
    allow: bool
    die: str | None = None  # "tool" or "model": the resuming worker SIGKILLs itself there
    fail: bool = False  # the model round after the tool fails once (5xx)
    race: bool = False  # the resume is sent to two workers at once


def plans(turns: int, prefix: str, *, faults: bool = True, memory: bool = False) -> list[Plan]:
    """Every eighth turn is denied; with ``faults``, the others die, fail or race by their number.
    ``memory``: nothing is gated (every turn allowed), and a racing turn fails first (only a turn
    that stopped has a continuation to race for)."""
    found = []
    for n in range(turns):
        kind = n % 8
        if memory:
            found.append(
                Plan(
                    f"{prefix}t{n}",
                    allow=True,
                    die=("tool" if kind == 1 else "model" if kind == 3 else None) if faults else None,
                    fail=faults and kind in (2, 5, 6),
                    race=faults and kind in (2, 6),
                )
            )
            continue
        if not faults:
            found.append(Plan(f"{prefix}t{n}", allow=kind != 7))
            continue
        found.append(
            Plan(
                f"{prefix}t{n}",
                allow=kind != 7,
                die="tool" if kind == 1 else "model" if kind == 3 else None,
                fail=kind == 5,
                race=kind in (2, 6),
            )
        )
    return found


@dataclass
class Outcome:
    plans: list[Plan]
    done: Counter[str] = field(default_factory=Counter)
    answers: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    kills: int = 0
    seconds: float = 0.0

    @property
    def turns_per_second(self) -> float:
        return len(self.plans) / self.seconds if self.seconds else 0.0

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.latencies)
        return 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


class Pool:
    """Idle workers; a dead one is replaced (as a supervisor would restart it)."""

    def __init__(self, size: int, args: list[str]) -> None:
        self.args = args
        self.idle: queue.Queue[_Process] = queue.Queue()
        self.all: list[_Process] = []
        self.lock = threading.Lock()
        for _ in range(size):
            self.put(self.spawn())

    def spawn(self) -> _Process:
        process = _Process(self.args)
        with self.lock:
            self.all.append(process)
        return process

    def put(self, process: _Process) -> None:
        self.idle.put(process)

    def close(self) -> None:
        for process in self.all:
            process.close()


def _send(pool: Pool, task: dict[str, Any], outcome: Outcome) -> dict[str, Any] | None:
    """The task on an idle worker (another each time: turns move between workers); ``None`` when the
    worker died doing it (it is replaced)."""
    process = pool.idle.get()
    answer = process.call(task)
    if answer is None:
        outcome.kills += 1
        pool.put(pool.spawn())
    else:
        pool.put(process)
    return answer


def _race(pool: Pool, task: dict[str, Any], outcome: Outcome, senders: int) -> list[dict[str, Any] | None]:
    """``task`` sent by ``senders`` threads at once (to as many workers); their answers."""
    if senders == 1:
        return [_send(pool, dict(task), outcome)]
    answers: list[dict[str, Any] | None] = []

    def send() -> None:
        answers.append(_send(pool, dict(task), outcome))

    racers = [threading.Thread(target=send) for _ in range(senders)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    return answers


def drive(pool: Pool, plan: Plan, outcome: Outcome) -> None:
    """One turn from its pause to its answer, through whatever its plan throws at it."""
    began = time.perf_counter()
    paused = _send(pool, {"op": "start", "turn": plan.turn}, outcome)
    assert paused is not None and "state" in paused, paused
    state = outcome.states[plan.turn] = paused["state"]
    task: dict[str, Any] = {
        "op": "resume",
        "turn": plan.turn,
        "state": state,
        "allow": plan.allow,
        "die": plan.die,
        "fail": plan.fail,
        "crash": False,
    }
    for _ in range(10):
        answers = _race(pool, task, outcome, 2 if plan.race and task["die"] is None and not task["fail"] else 1)
        for answer in answers:
            if answer is not None and "done" in answer:
                outcome.done[plan.turn] += 1
                outcome.answers[plan.turn] = answer["done"]
        if outcome.done[plan.turn]:
            outcome.latencies.append(time.perf_counter() - began)
            return
        died = any(answer is None for answer in answers)
        errors = {answer["error"] for answer in answers if answer is not None and "error" in answer}
        if died and task["die"] == "tool":
            task["crash"] = True  # the supervisor knows that process is gone: take its turn over
        elif "TurnInProgressError" in errors and task["die"] == "tool":
            task["crash"] = True
        elif errors - {"ServerError", "TurnInProgressError", "PendingStateNotFoundError"}:
            raise AssertionError(f"turn {plan.turn}: {answers}")
        task["die"], task["fail"] = None, False
    raise AssertionError(f"turn {plan.turn} never completed")


def drive_memory(pool: Pool, plan: Plan, outcome: Outcome) -> None:
    """One memory-backed turn from its prompt to its answer: after a death or a failure, another worker
    finishes it from the conversation's journal alone (no error object, no pending store)."""
    began = time.perf_counter()
    task: dict[str, Any] = {"op": "memory-start", "turn": plan.turn, "die": plan.die, "fail": plan.fail, "allow": True}
    answers = [_send(pool, task, outcome)]
    task = {"op": "memory-continue", "turn": plan.turn, "die": None, "fail": False, "crash": False, "allow": True}
    for _ in range(10):
        for answer in answers:
            if answer is not None and "done" in answer:
                outcome.done[plan.turn] += 1
                outcome.answers[plan.turn] = answer["done"]
        if outcome.done[plan.turn]:
            outcome.latencies.append(time.perf_counter() - began)
            return
        errors = {answer["error"] for answer in answers if answer is not None and "error" in answer}
        if plan.die and (any(a is None for a in answers) or "TurnInProgressError" in errors):
            task["crash"] = True  # the supervisor knows that process is gone: take its turn over
        elif errors - {"ServerError", "TurnInProgressError"}:
            raise AssertionError(f"turn {plan.turn}: {answers}")
        answers = _race(pool, task, outcome, 2 if plan.race else 1)
    raise AssertionError(f"turn {plan.turn} never completed")


def run(
    backend: str,
    where: str,
    *,
    workers: int = 4,
    turns: int = 40,
    prefix: str | None = None,
    faults: bool = True,
    journal: bool = True,
    scenario: str = "pending",
) -> Outcome:
    """Drive ``turns`` turns through ``workers`` processes sharing one store on ``backend``.
    ``journal=False`` hides the store's journal (resumes take the state up front, as before durable
    turns): only meaningful without ``faults``, to measure what the journal costs. ``scenario``:
    ``pending`` (paused turns resumed from the store) or ``memory`` (no store: the turn journal)."""
    prefix = prefix or f"soak{os.getpid()}{int(time.time() * 1000) % 100000}_"
    ledger = str(Path(tempfile.mkdtemp(prefix="soak-ledger-")) / "ledger.jsonl")
    memory = scenario == "memory"
    outcome = Outcome(plans(turns, prefix, faults=faults, memory=memory))
    turn_of = drive_memory if memory else drive
    args = ["--backend", backend, "--where", where, "--prefix", prefix, "--ledger", ledger]
    pool = Pool(workers, [*args, "--journal", "on" if journal else "off"])
    try:
        began = time.perf_counter()
        todo: queue.Queue[Plan] = queue.Queue()
        for plan in outcome.plans:
            todo.put(plan)
        failures: list[BaseException] = []

        def drain() -> None:
            while True:
                try:
                    plan = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    turn_of(pool, plan, outcome)
                except BaseException as exc:  # reported after the run
                    failures.append(exc)

        drivers = [threading.Thread(target=drain) for _ in range(max(1, workers // 2))]
        for thread in drivers:
            thread.start()
        for thread in drivers:
            thread.join()
        outcome.seconds = time.perf_counter() - began
        if failures:
            raise failures[0]
    finally:
        pool.close()
    check(outcome, backend, where, prefix, ledger, memory=memory)
    return outcome


def check(outcome: Outcome, backend: str, where: str, prefix: str, ledger: str, *, memory: bool = False) -> None:
    """The soak's invariants (see the module docstring)."""
    from chatclient.errors import PendingStateError
    from chatclient.messages import AssistantMessage, ToolResponseMessage

    store, repository = _stores(backend, where, prefix)
    lines = [json.loads(line) for line in Path(ledger).read_text().splitlines()] if Path(ledger).exists() else []
    starts = Counter(line["turn"] for line in lines if line["what"] == "start")
    by_turn = {plan.turn: plan for plan in outcome.plans}
    for plan in outcome.plans:
        turn = plan.turn
        assert outcome.done[turn] == 1, f"{turn} completed {outcome.done[turn]} times"
        assert starts[turn] <= 1, f"the gated tool of {turn} ran {starts[turn]} times"
        if not plan.allow:
            assert starts[turn] == 0, f"{turn} was denied, yet its tool ran"
        events = repository.events(turn)
        messages = [e.message() for e in events if e.type == "message"]
        assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"], (turn, messages)
        assert len({e.turn_id for e in events}) == 1, f"{turn} stored as more than one turn"
        for index, message in enumerate(messages):
            if isinstance(message, AssistantMessage) and message.tool_calls:
                results = messages[index + 1]
                assert isinstance(results, ToolResponseMessage)
                assert {r.id for r in results.responses} == {c.id for c in message.tool_calls}
        if plan.die == "tool":
            assert UNKNOWN in outcome.answers[turn], outcome.answers[turn]
        if memory:
            assert repository.turn_journals(turn) == [], f"the journal of {turn} was not cleared"
            continue
        try:
            store.peek(outcome.states[turn])
        except PendingStateError:
            pass
        else:
            raise AssertionError(f"the state of {turn} is still waiting in the store")
    assert all(line["allowed"] for line in lines), "a gated tool ran without an allow"
    assert set(starts) <= set(by_turn)
    for thing in (store, repository):
        close = getattr(thing, "close", None)
        if close is not None:
            close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    worker = sub.add_parser("worker")
    for name in ("--backend", "--where", "--prefix", "--ledger", "--journal"):
        worker.add_argument(name, required=True)
    parser.add_argument("--backend", choices=BACKENDS, action="append")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--no-faults", action="store_true", help="no kills, failures or races")
    parser.add_argument("--no-journal", action="store_true", help="hide the journal (with --no-faults)")
    parser.add_argument("--scenario", choices=("pending", "memory"), default="pending")
    args = parser.parse_args(argv)
    if args.command == "worker":
        _worker_main(args.backend, args.where, args.prefix, args.ledger, args.journal == "on")
        return
    for backend in args.backend or BACKENDS:
        where = (
            tempfile.mkdtemp(prefix="soak-")
            if backend == "sqlite"
            else os.environ[f"CHATCLIENT_TEST_{backend.upper()}_URL"]
        )
        outcome = run(
            backend,
            where,
            workers=args.workers,
            turns=args.turns,
            faults=not args.no_faults,
            journal=not args.no_journal,
            scenario=args.scenario,
        )
        print(
            f"{backend}, {args.scenario} (faults {'off' if args.no_faults else 'on'}, "
            f"journal {'off' if args.no_journal else 'on'}): "
            f"{len(outcome.plans)} turns, {args.workers} workers, {outcome.kills} SIGKILLs: "
            f"{outcome.turns_per_second:.1f} turns/s, p99 {outcome.p99_ms:.0f} ms"
        )


if __name__ == "__main__":
    main()
