"""Tool search: tokens a turn sends with and without it, deterministic; fails when a target is missed.

``python -m benchmarks.tool_search`` (or ``make bench-tool-search``). Every turn goes through
chatclient's own providers (OpenAI Chat Completions, Anthropic Messages) over an
``httpx2.MockTransport`` whose handler is a scripted model that behaves like a capable LLM: stateless,
it decides each reply from the request body, searches (one query per need, in one reply) for the
tools it lacks, retries a failed search once with other words, and only calls tools the request
offers. Tokens are o200k_base over the canonical JSON of every request body, plus a fixed estimate
per reply (3 + text, per call 5 + name + arguments), summed over the turn; the saving is 1 - search
/ plain for the same turn, with the plain tool loop as the baseline and the advisor at its defaults.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx2

from advisors.tool_index import Bm25Index, RegexIndex
from advisors.tool_search import ToolSearchExtension, ToolSearchToolCallingAdvisor
from chatclient import ChatClient
from chatclient.advisor import ChatClientRequest
from chatclient.options import ToolCallingChatOptions
from chatclient.prompt import Prompt
from chatclient.tools import FunctionToolCallback, ToolCallback

from .canned import (
    ANTHROPIC_BASE,
    JSON_HEADERS,
    OPENAI_BASE,
    _anthropic_calls,
    _anthropic_text,
    _openai_calls,
    _openai_text,
)
from .tool_catalogue import catalogue

PROMPT = (
    "Help me plan what to wear today in Landsmeer, NL. Please suggest clothing shops that are open right now. "
    "Use the tools for getting the current time."
)
ANSWER = "It is 10:30 and 14 °C with light rain: wear a rain jacket. Zeeman and HEMA are open until 18:00."
SIZES = (5, 28, 50, 100, 200)
TARGETS = {28: 0.70, 100: 0.85, 5: -0.02}
"""Least saving per catalogue size, on every wire (200 is reported, not gated)."""

# (tool, first query, rephrased query)
NEEDS = (
    ("currentTime", "current time", "what time is it now"),
    ("weather", "weather", "weather forecast temperature"),
    ("clothing", "clothing shops", "clothes store open"),
)
RESULTS = {
    "currentTime": "2025-05-01T10:30 (Europe/Amsterdam)",
    "weather": "14 °C, light rain, wind 4 Bft",
    "clothing": "Zeeman (open until 18:00), HEMA (open until 18:00)",
}
LOCATION, NOW = "Landsmeer, NL", "2025-05-01T10:30"


# ----------------------------------------------------------------------------- the scripted model


@dataclass
class Parsed:
    offered: list[str]
    calls: list[tuple[str, str, dict[str, Any]]]
    results: set[str]


def parse(wire: str, body: dict[str, Any]) -> Parsed:
    if wire == "openai":
        offered = [t["function"]["name"] for t in body.get("tools", [])]
        calls = [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for m in body["messages"]
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        ]
        results = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
        return Parsed(offered, calls, results)
    offered = [t["name"] for t in body.get("tools", [])]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    calls = [(b["id"], b["name"], b["input"]) for b in blocks if b.get("type") == "tool_use"]
    results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
    return Parsed(offered, calls, results)


SEARCH_WIRES = ("openai", "anthropic")
"""The wires this benchmark's scripted model reads (:func:`parse`)."""

STYLES = ("per-need", "combined", "sequential")
"""How the model searches: one query per need in one reply (the default), one query for every need,
or one search per reply interleaved with calls (Spring's demo flow)."""


def decide(
    parsed: Parsed, round_: int, style: str = "per-need"
) -> tuple[str | None, list[tuple[str, str, dict[str, Any]]]]:
    """(text, calls) of the next reply, as a capable model would write it."""
    done = {name for call_id, name, _ in parsed.calls if call_id in parsed.results}
    if all(need in done for need, _, _ in NEEDS):
        return ANSWER, []
    offered = set(parsed.offered)
    searched = [args.get("query") for _, name, args in parsed.calls if name == "tool_search"]
    phase = ["currentTime"] if "currentTime" not in done else [n for n in ("weather", "clothing") if n not in done]
    lacking = [n for n in NEEDS if n[0] not in done and n[0] not in offered]
    if style == "sequential" and all(name in offered for name in phase):
        lacking = []  # call what this step needs first; search for the rest later
    if lacking:
        if "tool_search" not in offered:
            return "I do not have the tools for this.", []
        queries = []
        for _, first, second in lacking:
            if first not in searched and (style != "combined" or round_ > 1):
                queries.append(first)
            elif second not in searched:
                queries.append(second)
            else:
                return "I could not find the tools for this.", []  # gives up: the turn is incomplete
        if style == "combined" and round_ == 1:
            queries = [" ".join(first for _, first, _ in lacking)]
        elif style == "sequential":
            queries = queries[:1]
        return None, [(f"call_{round_}_{i}", "tool_search", {"query": q}) for i, q in enumerate(queries)]
    if "currentTime" not in done:
        return None, [(f"call_{round_}_0", "currentTime", {})]
    return None, [(f"call_{round_}_{i}", n, {"location": LOCATION, "time": NOW}) for i, n in enumerate(phase)]


@dataclass
class Turn:
    bodies: list[str] = field(default_factory=list)
    offered: list[int] = field(default_factory=list)
    reply_tokens: int = 0
    violations: list[str] = field(default_factory=list)
    complete: bool = False
    called: list[str] = field(default_factory=list)


class ScriptedBackend:
    """Serves one wire through a mock transport; records each request body and the replies' cost."""

    def __init__(self, wire: str, count: Callable[[str], int], style: str = "per-need") -> None:
        self.wire = wire
        self.style = style
        self.base_url = OPENAI_BASE if wire == "openai" else ANTHROPIC_BASE
        self.count = count
        self.turn = Turn()

    def handler(self, request: Any) -> Any:
        body = json.loads(request.content)
        turn = self.turn
        turn.bodies.append(json.dumps(body, separators=(",", ":"), ensure_ascii=False))
        parsed = parse(self.wire, body)
        turn.offered.append(len(parsed.offered))
        text, calls = decide(parsed, len(turn.bodies), self.style)
        for _, name, _ in calls:
            if name not in parsed.offered:
                turn.violations.append(name)
            turn.called.append(name)
        turn.reply_tokens += 3 + (self.count(text) if text else 0)
        turn.reply_tokens += sum(5 + self.count(name) + self.count(json.dumps(args)) for _, name, args in calls)
        if text == ANSWER:
            turn.complete = True
        if self.wire == "openai":
            reply = _openai_calls(calls) if calls else _openai_text(text or "")
        else:
            reply = _anthropic_calls(calls) if calls else _anthropic_text(text or "")
        return httpx2.Response(200, headers=JSON_HEADERS, content=json.dumps(reply).encode())

    def sync_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


def tools_of(size: int) -> list[ToolCallback]:
    """The catalogue as tools with explicit JSON schemas (as a catalogue or an MCP server gives them)."""

    def make(name: str) -> Callable[[dict[str, Any]], str]:
        return lambda arguments: RESULTS.get(name, "ok")

    return [
        FunctionToolCallback.builder(name, make(name)).description(description).input_schema(schema).build()
        for name, description, schema in catalogue(size)
    ]


def run_turn(wire: str, size: int, search: bool, count: Callable[[str], int], style: str = "per-need") -> Turn:
    from .libs.chatclient_lib import make_model

    backend = ScriptedBackend(wire, count, style)
    builder = ChatClient.builder(make_model(wire, backend)).default_tools(tools_of(size))  # type: ignore[arg-type]
    if search:
        builder = builder.default_advisors(ToolSearchToolCallingAdvisor())
    builder.build().prompt(PROMPT).call().content()
    return backend.turn


def turn_tokens(turn: Turn, count: Callable[[str], int]) -> int:
    return sum(count(body) for body in turn.bodies) + turn.reply_tokens


# ----------------------------------------------------------------------------- the tables


def definition_tokens(size: int, count: Callable[[str], int]) -> int:
    return sum(count(json.dumps({"name": n, "description": d, "parameters": s})) for n, d, s in catalogue(size))


def savings_table(count: Callable[[str], int]) -> tuple[list[str], list[str]]:
    lines = [
        "| wire | tools | definition tokens | plain: tokens (calls) | search: tokens (calls) | offered per round | "
        "saving | target | with Anthropic's hidden tool prompt |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    failures: list[str] = []
    for wire in SEARCH_WIRES:
        for size in SIZES:
            plain, searched = run_turn(wire, size, False, count), run_turn(wire, size, True, count)
            p, s = turn_tokens(plain, count), turn_tokens(searched, count)
            saving = 1 - s / p
            target = TARGETS.get(size)
            verdict = "report" if target is None else ("met" if saving >= target else "MISSED")
            if target is not None and saving < target:
                failures.append(f"{wire} {size} tools: saving {saving:.0%} < {target:.0%}")
            for label, turn in (("plain", plain), ("search", searched)):
                if not turn.complete:
                    failures.append(f"{wire} {size} tools: the {label} turn did not complete")
                if turn.violations:
                    failures.append(f"{wire} {size} tools: {label} called tools not offered: {turn.violations}")
            if any(n != size for n in plain.offered):
                failures.append(f"{wire} {size} tools: the plain loop did not offer the whole catalogue")
            offered = " / ".join(map(str, searched.offered))
            lines.append(
                f"| {wire} | {size} | {definition_tokens(size, count):,} | {p:,} ({len(plain.bodies)}) | "
                f"{s:,} ({len(searched.bodies)}) | {offered} | {saving:.0%} | "
                f"{'' if target is None else f'≥ {target:.0%} '}{verdict} | "
                f"{hidden_saving(wire, plain, searched, p, s)} |"
            )
    return lines, failures


def styles_table(count: Callable[[str], int]) -> tuple[list[str], list[str]]:
    """The saving whatever the model's search style (OpenAI format; reported, not gated on saving)."""
    sizes = (28, 100, 200)
    lines = ["| search style | " + " | ".join(f"{n} tools (calls)" for n in sizes) + " |", "|---" * 4 + "|"]
    failures: list[str] = []
    for style in STYLES:
        cells = []
        for size in sizes:
            plain, searched = run_turn("openai", size, False, count), run_turn("openai", size, True, count, style)
            if not searched.complete or searched.violations:
                failures.append(f"{style} search at {size} tools: incomplete or called tools not offered")
            saving = 1 - turn_tokens(searched, count) / turn_tokens(plain, count)
            cells.append(f"{saving:.0%} ({len(searched.bodies)})")
        lines.append(f"| {style} | " + " | ".join(cells) + " |")
    return lines, failures


ANTHROPIC_HIDDEN_TOOL_PROMPT = 346
"""Tokens Anthropic adds to every request that offers tools (tool_choice auto), per its pricing docs."""


def hidden_saving(wire: str, plain: Turn, searched: Turn, p: int, s: int) -> str:
    """The saving once Anthropic's hidden tool prompt is counted (reported, not gated)."""
    if wire != "anthropic":
        return ""
    hidden = ANTHROPIC_HIDDEN_TOOL_PROMPT
    p_hidden = p + hidden * sum(1 for n in plain.offered if n)
    s_hidden = s + hidden * sum(1 for n in searched.offered if n)
    return f"{1 - s_hidden / p_hidden:.0%}"


def _median_us(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def cost_table(repeat: int) -> list[str]:
    """CPU per round at 1,000 tools (index queries, the whole hook) and the cost of validation."""
    tools = tools_of(1000)
    definitions = [t.definition for t in tools]
    queries = ["current time", "weather", "clothing shops"]
    lines = ["| what (1,000 tools unless said) | µs |", "|---|---|"]
    factories: list[tuple[str, Callable[[Any], Any]]] = [("BM25", Bm25Index), ("regex", RegexIndex)]
    for label, factory in factories:
        build = _median_us(partial(_cold_build, factory, definitions), max(3, repeat // 20))
        search = factory(definitions).search
        query = statistics.median(_median_us(partial(search, q, 5), repeat) for q in queries)
        lines.append(f"| {label} index: build, once per catalogue (cold) | {build:,.0f} |")
        lines.append(f"| {label} index: one query | {query:,.1f} |")
    extension = ToolSearchExtension()
    request = ChatClientRequest(Prompt(PROMPT, ToolCallingChatOptions(tool_callbacks=tuple(tools))), {})
    from advisors.tool_calling import LoopState

    state = LoopState(streaming=False, round=1, history=request.prompt.messages)
    extension.do_before_call(request, state)  # builds and caches the index
    hook = _median_us(lambda: extension.do_before_call(request, state), repeat)
    lines.append(f"| do_before_call per round (catalogue cached) | {hook:,.1f} |")
    weather = next(t for t in tools if t.name == "weather")
    arguments = json.dumps({"location": LOCATION, "time": NOW})
    schema_cost = _median_us(lambda: weather.validate_arguments(arguments), repeat)
    typed = _typed_weather()
    typed_cost = _median_us(lambda: typed.validate_arguments(arguments), repeat)
    lines.append(f"| validate one call's arguments: input_schema (jsonschema) | {schema_cost:,.1f} |")
    lines.append(f"| validate one call's arguments: typed function (pydantic), for comparison | {typed_cost:,.1f} |")
    return lines


def _cold_build(factory: Callable[[Any], Any], definitions: list[Any]) -> Any:
    """A first build: the tokenizer's word cache emptied, as in a fresh process."""
    from advisors.tool_index import _terms

    _terms.cache_clear()
    return factory(definitions)


def _typed_weather() -> ToolCallback:
    def weather(location: str, time: str) -> str:
        return RESULTS["weather"]

    return FunctionToolCallback.builder("weather", weather).build()


def estimate_check(count: Callable[[str], int]) -> list[str]:
    """How the advisor's bypass estimate (4 characters a token) compares with o200k_base."""
    from advisors.tool_search import estimate_tokens

    lines = ["| tools | definition tokens, o200k_base | the advisor's estimate | bypassed |", "|---|---|---|---|"]
    for size in (5, 8, 10, 28):
        texts = [t.definition.model_dump_json() for t in tools_of(size)]
        real, estimate = sum(count(t) for t in texts), sum(estimate_tokens(t) for t in texts)
        lines.append(f"| {size} | {real:,} | {estimate:,} | {'yes' if estimate < 1000 else 'no'} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=200, help="timing samples per figure (default 200)")
    args = parser.parse_args(argv)
    from .tokens import o200k_counter

    count = o200k_counter()
    savings, failures = savings_table(count)
    print("### Tool search: tokens per turn (o200k_base), plain tool loop vs ToolSearchToolCallingAdvisor()\n")
    print("\n".join(savings))
    styles, style_failures = styles_table(count)
    failures += style_failures
    print("\n### Whatever the model's search style (OpenAI format)\n")
    print("\n".join(styles))
    print("\n### The bypass estimate\n")
    print("\n".join(estimate_check(count)))
    print("\n### CPU per round\n")
    print("\n".join(cost_table(args.repeat)))
    if failures:
        print("\nTargets missed:\n" + "\n".join(f"- {f}" for f in failures))
        return 1
    print("\nEvery target met; every turn complete; no call to a tool that was not offered.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
