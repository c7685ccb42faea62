"""Measuring and reporting: interleaved rounds, per-op samples, medians and p90, Markdown tables.

Every series (one library, one wire format, one mode) is warmed up, then measured in rounds; in each
round every series runs in turn (the order rotates from round to round), for at most ``ops`` operations
or ``seconds``, whichever comes first, so that machine noise falls on all libraries alike. Every
operation is timed on its own with ``time.perf_counter_ns``.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import tools
from .libs import LABELS, describe_error

TIMES = "\u00d7"
"""The multiplication sign of the ratio columns."""
DASH = "\u2013"
"""An en dash: a cell with nothing to show."""

_loop: asyncio.AbstractEventLoop | None = None
"""The one event loop of the harness (made on first use): loopback connections stay in the loop that
opened them."""


def run_async(coro: Any) -> Any:
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(coro)


def close_loop() -> None:
    global _loop
    if _loop is not None and not _loop.is_closed():
        _loop.run_until_complete(_loop.shutdown_asyncgens())
        _loop.close()
    _loop = None


# ------------------------------------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return float(ordered[n // 2]) if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)])


# ------------------------------------------------------------------------------------------- series


@dataclass
class Series:
    """One library, wire format and mode of one scenario: what to run and what it measured."""

    lib: str
    wire: str
    mode: str
    op: Callable[[], Any] | None = None
    is_async: bool = False
    check: Callable[[Any], str | None] | None = None
    """Validates ``(result, tool runs)`` of one operation: ``None`` if fine, else what is wrong."""
    na: str | None = None
    samples: list[int] = field(default_factory=list)
    extra: dict[str, list[int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return LABELS.get(self.lib, self.lib)

    @property
    def ok(self) -> bool:
        return self.na is None and bool(self.samples)

    def fail(self, exc: BaseException) -> None:
        self.na = f"n/a (error: {describe_error(exc)})"

    def median(self) -> float:
        return median(self.samples)

    def p90(self) -> float:
        return p90(self.samples)


def _timed_sync(op: Callable[[], Any], ops: int, seconds: float) -> tuple[list[int], Any]:
    samples: list[int] = []
    clock = time.perf_counter_ns
    deadline = clock() + int(seconds * 1e9)
    result = None
    for _ in range(ops):
        start = clock()
        result = op()
        end = clock()
        samples.append(end - start)
        if end > deadline:
            break
    return samples, result


async def _timed_async(op: Callable[[], Any], ops: int, seconds: float) -> tuple[list[int], Any]:
    samples: list[int] = []
    clock = time.perf_counter_ns
    deadline = clock() + int(seconds * 1e9)
    result = None
    for _ in range(ops):
        start = clock()
        result = await op()
        end = clock()
        samples.append(end - start)
        if end > deadline:
            break
    return samples, result


def run_ops(series: Series, ops: int, seconds: float) -> tuple[list[int], Any]:
    assert series.op is not None
    if series.is_async:
        return run_async(_timed_async(series.op, ops, seconds))  # type: ignore[no-any-return]
    return _timed_sync(series.op, ops, seconds)


def validate(series: Sequence[Series]) -> None:
    """Run each series once and check its result; a series that fails is reported, not measured."""
    for s in series:
        if s.op is None or s.na is not None:
            continue
        counted = _counting(s.op, s.is_async)
        try:
            result = run_async(counted()) if s.is_async else counted()
        except Exception as exc:
            s.fail(exc)
            continue
        problem = s.check(result) if s.check else None
        if problem:
            s.na = f"n/a (wrong result: {problem})"


def _counting(op: Callable[[], Any], is_async: bool) -> Callable[[], Any]:
    """The op's result and the number of tool runs it caused."""
    if is_async:

        async def acounted() -> Any:
            before = tools.RUNS[0]
            value = await op()
            return value, tools.RUNS[0] - before

        return acounted

    def counted() -> Any:
        before = tools.RUNS[0]
        value = op()
        return value, tools.RUNS[0] - before

    return counted


def measure(series: Sequence[Series], *, rounds: int, ops: int, seconds: float, warmup: int) -> None:
    """Validate and warm up every series, then measure them in interleaved rounds.

    Everything alive after validation (all the libraries' modules and clients) is moved out of the
    garbage collector's sight (``gc.freeze``): in one process that imported every library a full
    collection would otherwise scan all of them, which none of them pays when used alone.
    """
    validate(series)
    gc.collect()
    gc.freeze()
    try:
        _measure(series, rounds=rounds, ops=ops, seconds=seconds, warmup=warmup)
    finally:
        gc.unfreeze()


def warmed(series: Sequence[Series], warmup: int, seconds: float) -> list[Series]:
    """The series that can run, each warmed up; one that raises is marked failed and left out."""
    live = [s for s in series if s.na is None and s.op is not None]
    for s in live:
        try:
            run_ops(s, warmup, seconds * 4)
        except Exception as exc:
            s.fail(exc)
    return [s for s in live if s.na is None]


def _measure(series: Sequence[Series], *, rounds: int, ops: int, seconds: float, warmup: int) -> None:
    live = warmed(series, warmup, seconds)
    for r in range(rounds):
        shift = r % len(live) if live else 0
        for s in live[shift:] + live[:shift]:
            if s.na is not None:
                continue
            gc.collect()
            try:
                samples, _ = run_ops(s, ops, seconds)
            except Exception as exc:
                s.fail(exc)
                continue
            s.samples.extend(samples)


# ------------------------------------------------------------------------------------------- tables


def fmt_us(ns: float) -> str:
    us = ns / 1000
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}"


def fmt_ms(ns: float) -> str:
    ms = ns / 1e6
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.2f}{TIMES}" if value < 10 else f"{value:.1f}{TIMES}"


@dataclass
class Table:
    scenario: str
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"### {self.scenario}: {self.title}", ""]
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "|".join("---" if i < 3 else "--:" for i in range(len(self.columns))) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.notes:
            lines.append("")
            lines += [f"- {note}" for note in self.notes]
        return "\n".join(lines) + "\n"


@dataclass
class Budget:
    scenario: str
    what: str
    target: str
    actual: str
    holds: bool | None
    """``None`` when it could not be measured."""

    def row(self) -> list[str]:
        verdict = "n/a" if self.holds is None else ("holds" if self.holds else "**missed**")
        return [self.scenario, self.what, self.target, self.actual, verdict]


def budget_table(budgets: Sequence[Budget]) -> Table:
    table = Table("Budgets", "chatclient against its budgets", ["scenario", "budget", "target", "measured", "verdict"])
    table.rows = [b.row() for b in budgets]
    return table


def find(series: Sequence[Series], lib: str, wire: str, mode: str) -> Series | None:
    for s in series:
        if s.lib == lib and s.wire == wire and s.mode == mode:
            return s
    return None


def time_table(
    scenario: str, title: str, series: Sequence[Series], unit: str = "µs", extra_columns: Sequence[str] = ()
) -> Table:
    """The usual table: median, p90 and the ratio of medians to raw httpx2's, per wire and mode."""
    fmt = fmt_us if unit == "µs" else fmt_ms
    columns = ["wire", "mode", "library", f"median {unit}", f"p90 {unit}", f"{TIMES} raw httpx2", *extra_columns]
    table = Table(scenario, title, columns)
    for s in series:
        if not s.ok:
            table.rows.append([s.wire, s.mode, s.label, s.na or "n/a", "", "", *([""] * len(extra_columns))])
            continue
        raw = find(series, "raw", s.wire, s.mode)
        ratio = s.median() / raw.median() if raw is not None and raw.ok else None
        table.rows.append([s.wire, s.mode, s.label, fmt(s.median()), fmt(s.p90()), fmt_ratio(ratio)])
    return table


def ahead_of_peers(series: Sequence[Series], *, higher_is_better: bool = False) -> tuple[bool | None, str]:
    """Whether chatclient's median beats every peer's (not raw httpx2) in each wire/mode group."""
    behind: list[str] = []
    compared = 0
    for s in series:
        if s.lib != "chatclient" or not s.ok:
            continue
        for peer in series:
            if peer.lib in ("raw", "chatclient") or peer.wire != s.wire or peer.mode != s.mode or not peer.ok:
                continue
            compared += 1
            ours, theirs = s.median(), peer.median()
            if (ours < theirs) if higher_is_better else (ours > theirs):
                behind.append(f"{peer.label} ({s.wire}, {s.mode})")
    if not compared:
        return None, "no peer measured"
    return (not behind), ("behind " + ", ".join(behind) if behind else f"ahead in all {compared} comparisons")
