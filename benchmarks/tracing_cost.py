"""S1T: what tracing costs when nothing records. S1 (one call, text reply) three ways in one run,
interleaved: raw httpx2 (the floor), chatclient with tracing absent (no observer), and chatclient
with ``chatclient.tracing.OpenTelemetryObserver`` registered but no SDK (the global no-op tracer
provider of ``opentelemetry-api``), on the same model object and mock transport.

The budget: tracing on but not recording at most 1.02 times tracing absent (median against median).
``make bench BENCH_ARGS="--only S1T --libs raw,chatclient"``.
"""

from __future__ import annotations

from typing import Any

from .canned import PROMPT, TEXT
from .harness import TIMES, Budget, Series, Table, find, fmt_ratio, fmt_us, measure
from .scenarios import Context, Result, build

BUDGET = 1.02
ABSENT = "chatclient"
TRACED = "chatclient, tracing on (nothing records)"
UNSAMPLED = "chatclient, SDK provider sampling nothing"
MODES = (("sync", "call"), ("async", "acall"))


class _Clients:
    """Two clients on one model: one without observers, one with the OpenTelemetry observer."""

    def __init__(self, model: Any) -> None:
        from opentelemetry import trace

        from chatclient import ChatClient
        from chatclient.tracing import OpenTelemetryObserver

        if trace.get_tracer("probe").start_span("probe").is_recording():
            raise RuntimeError("a tracer provider is set and records: not the case measured here")
        observer = OpenTelemetryObserver()
        self.plain = ChatClient.create(model)
        self.traced = ChatClient.builder(model).observers(observer).build()
        self.unsampled: Any = None
        try:  # only where the SDK is installed (not in the benchmark venv): for information, no budget
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
        except ImportError:
            return
        off = OpenTelemetryObserver(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
        self.unsampled = ChatClient.builder(model).observers(off).build()

    def call(self) -> str | None:
        return self.plain.prompt(PROMPT).call().content()

    async def acall(self) -> str | None:
        return await self.plain.prompt(PROMPT).acall().content()

    def call_traced(self) -> str | None:
        return self.traced.prompt(PROMPT).call().content()

    async def acall_traced(self) -> str | None:
        return await self.traced.prompt(PROMPT).acall().content()

    def call_unsampled(self) -> str | None:
        return self.unsampled.prompt(PROMPT).call().content()  # type: ignore[no-any-return]

    async def acall_unsampled(self) -> str | None:
        return await self.unsampled.prompt(PROMPT).acall().content()  # type: ignore[no-any-return]


def _check(result: Any) -> str | None:
    value, _ = result
    return None if value == TEXT else f"expected {TEXT!r}, got {str(value)[:60]!r}"


def _our_series(ctx: Context) -> list[Series]:
    from .backends import MockBackend
    from .libs import describe_error
    from .libs.chatclient_lib import make_model

    series: list[Series] = []
    for wire in ctx.wires:
        clients: _Clients | None = None
        na = None
        try:
            clients = _Clients(make_model(wire, MockBackend(wire)))
        except Exception as exc:  # opentelemetry-api missing, a provider that records
            na = f"n/a (error: {describe_error(exc)})"
        for mode, method in MODES:
            for lib, name in ((ABSENT, method), (TRACED, f"{method}_traced"), (UNSAMPLED, f"{method}_unsampled")):
                if lib == UNSAMPLED and (clients is None or clients.unsampled is None):
                    continue
                s = Series(lib, wire, mode, is_async=method.startswith("a"), check=_check, na=na)
                if clients is not None:
                    s.op = getattr(clients, name)
                series.append(s)
    return series


def s1t(ctx: Context) -> Result:
    c = ctx.config
    raw = build(ctx, MODES, text=TEXT, tool_runs=0) if "raw" in ctx.libs else []
    raw = [s for s in raw if s.lib == "raw"]
    ours = _our_series(ctx)
    measure([*raw, *ours], rounds=c.rounds, ops=c.ops, seconds=c.seconds, warmup=c.warmup)
    table = Table(
        "S1T",
        "one call with tracing absent and with tracing on, nothing recording (µs per call, mock transport)",
        ["wire", "mode", "library", "median µs", "p90 µs", f"{TIMES} raw httpx2", f"{TIMES} tracing absent"],
    )
    budgets: list[Budget] = []
    for s in [*raw, *ours]:
        if not s.ok:
            table.rows.append([s.wire, s.mode, s.label, s.na or "n/a", "", "", ""])
            continue
        floor = find(raw, "raw", s.wire, s.mode)
        absent = find(ours, ABSENT, s.wire, s.mode)
        to_raw = s.median() / floor.median() if floor is not None and floor.ok else None
        compared = s.lib in (TRACED, UNSAMPLED) and absent is not None and absent.ok
        to_absent = s.median() / absent.median() if compared and absent is not None else None
        table.rows.append([s.wire, s.mode, s.label, fmt_us(s.median()), fmt_us(s.p90()), fmt_ratio(to_raw),
                           fmt_ratio(to_absent) if to_absent is not None else ""])  # fmt: skip
        if s.lib == TRACED:
            holds = None if to_absent is None else to_absent <= BUDGET
            actual = f"{to_absent:.3f}{TIMES}" if to_absent is not None else "n/a"
            budgets.append(Budget("S1T", f"tracing on, nothing records, {s.wire} {s.mode}",
                                  f"\u2264 {BUDGET:g}{TIMES} tracing absent", actual, holds))  # fmt: skip
    table.notes.append(
        "Tracing on = `OpenTelemetryObserver()` registered, `opentelemetry-api` installed, no SDK and no "
        "tracer provider set: the observer is inactive and the client runs as without it."
    )
    table.notes.append(
        "SDK provider sampling nothing (only where `opentelemetry-sdk` is installed; no budget): one "
        "non-sampled root span per call, every other point skipped."
    )
    return [table], budgets
