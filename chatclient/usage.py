"""Usage over many calls, and what it costs with prices you supply.

- :class:`UsageTracker` keeps a running total per model; every ``ChatClient`` has one
  (``client.usage`` is its snapshot, a :class:`UsageTotals`). A session's total comes from its log
  (``chatclient.memory.session_usage``).
- :class:`PriceTable` turns usage into a ``Decimal`` cost from a table **you** give, per million
  tokens; the library holds no prices. Any ``(usage, model) -> Decimal`` function can stand in for it.

Counting follows every provider's mapping here: ``prompt_tokens`` include the cache reads and
writes, ``completion_tokens`` include the reasoning tokens, so each token is priced once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Union

from .errors import ConfigurationError, UnknownModelPriceError
from .responses import ChatResponse, Usage

if TYPE_CHECKING:
    from .envelope import ChatClientResponse

__all__ = [
    "ModelPrice",
    "PriceHook",
    "PriceTable",
    "UsageTotals",
    "UsageTracker",
    "cost_of",
    "totals_of",
    "usage_minus",
]

PriceHook = Callable[[Usage, Union[str, None]], Decimal]  # noqa: UP007
"""Turns one model's usage into its cost; :class:`PriceTable` is one."""

_FIELDS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_MILLION = Decimal(1_000_000)


def usage_minus(usage: Usage, already: Usage | None) -> Usage:
    """What ``usage`` adds to ``already`` (a resumed turn's usage includes the rounds before its
    pause, which were counted with the paused reply); never below zero."""
    if already is None:
        return usage
    return Usage(**{name: max(getattr(usage, name) - getattr(already, name), 0) for name in _FIELDS})


@dataclass(frozen=True)
class UsageTotals:
    """Usage summed per model (``None``: the reply named no model) over ``calls`` replies."""

    by_model: Mapping[str | None, Usage] = field(default_factory=dict)
    calls: int = 0

    @property
    def total(self) -> Usage:
        total = Usage()
        for usage in self.by_model.values():
            total += usage
        return total

    def cost(self, prices: PriceHook) -> Decimal:
        """The cost of every model's usage under ``prices`` (a :class:`PriceTable` raises
        :class:`~chatclient.errors.UnknownModelPriceError` for a model it has no price for)."""
        return sum((prices(usage, model) for model, usage in self.by_model.items()), Decimal(0))

    def __add__(self, other: UsageTotals) -> UsageTotals:
        merged = dict(self.by_model)
        for model, usage in other.by_model.items():
            merged[model] = merged[model] + usage if model in merged else usage
        return UsageTotals(merged, self.calls + other.calls)


class UsageTracker:
    """A running total per model, safe to share between threads and tasks: each ``add`` is a few
    integer additions under a lock that nothing awaits while holding."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str | None, list[int]] = {}
        self._calls = 0

    def add(self, usage: Usage | None, model: str | None = None) -> None:
        """Count one reply (its usage, when the provider reported any)."""
        with self._lock:
            self._calls += 1
            if usage is None:
                return
            counts = self._counts.get(model)
            if counts is None:
                counts = self._counts[model] = [0] * len(_FIELDS)
            counts[0] += usage.prompt_tokens
            counts[1] += usage.completion_tokens
            counts[2] += usage.cache_read_tokens
            counts[3] += usage.cache_write_tokens
            counts[4] += usage.reasoning_tokens

    def totals(self) -> UsageTotals:
        with self._lock:
            return self._snapshot()

    def reset(self) -> UsageTotals:
        """Start again from zero; returns the totals up to now (nothing counted in between is lost)."""
        with self._lock:
            totals = self._snapshot()
            self._counts, self._calls = {}, 0
            return totals

    def _snapshot(self) -> UsageTotals:
        by_model = {model: Usage(**dict(zip(_FIELDS, counts, strict=True))) for model, counts in self._counts.items()}
        return UsageTotals(by_model, self._calls)


def _decimal(name: str, value: Decimal | int | float | str | None) -> Decimal | None:
    if value is None:
        return None
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except ArithmeticError as exc:
        raise ConfigurationError(f"price {name}={value!r} is not a number") from exc
    if not number.is_finite() or number < 0:
        raise ConfigurationError(f"price {name}={value!r} must be a finite number >= 0")
    return number


@dataclass(frozen=True, init=False)
class ModelPrice:
    """One model's prices per million tokens. ``cached_input`` (cache reads), ``cache_write`` and
    ``reasoning`` default to the input, input and output prices; numbers are kept as ``Decimal``
    (a float is read through its text, so ``0.15`` is exactly 0.15)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    reasoning: Decimal | None = None

    def __init__(
        self,
        input: Decimal | int | float | str,
        output: Decimal | int | float | str,
        cached_input: Decimal | int | float | str | None = None,
        cache_write: Decimal | int | float | str | None = None,
        reasoning: Decimal | int | float | str | None = None,
    ) -> None:
        for name, value in (
            ("input", input),
            ("output", output),
            ("cached_input", cached_input),
            ("cache_write", cache_write),
            ("reasoning", reasoning),
        ):
            if value is None and name in ("input", "output"):
                raise ConfigurationError(f"a ModelPrice needs an {name} price")
            object.__setattr__(self, name, _decimal(name, value))

    def cost(self, usage: Usage) -> Decimal:
        cached = usage.cache_read_tokens
        written = usage.cache_write_tokens
        fresh = max(usage.prompt_tokens - cached - written, 0)
        reasoning = min(usage.reasoning_tokens, usage.completion_tokens)
        visible = usage.completion_tokens - reasoning
        price_cached = self.cached_input if self.cached_input is not None else self.input
        price_written = self.cache_write if self.cache_write is not None else self.input
        price_reasoning = self.reasoning if self.reasoning is not None else self.output
        total = (
            fresh * self.input
            + cached * price_cached
            + written * price_written
            + visible * self.output
            + reasoning * price_reasoning
        )
        return total / _MILLION


_SNAPSHOT = re.compile(r"^(?P<base>.+?)-(?:\d{4}-\d{2}-\d{2}|\d{8})$")


class PriceTable:
    """Your prices, by model name: ``PriceTable({"my-model": ModelPrice(input="0.15", output="0.60")})``.

    A reply's model is looked up as it is, then without a date suffix (``gpt-x-2025-01-31`` and
    ``claude-x-20250131`` find ``gpt-x`` and ``claude-x``). A model with no price raises
    :class:`~chatclient.errors.UnknownModelPriceError` rather than counting as free; use
    :meth:`price_for` to test first.
    """

    def __init__(self, prices: Mapping[str, ModelPrice | Mapping[str, Any]]) -> None:
        table: dict[str, ModelPrice] = {}
        for model, price in prices.items():
            if not isinstance(model, str) or not model:
                raise ConfigurationError(f"price table keys are model names, got {model!r}")
            table[model] = price if isinstance(price, ModelPrice) else ModelPrice(**price)
        self._prices = table

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self._prices)

    def price_for(self, model: str | None) -> ModelPrice | None:
        if model is None:
            return None
        price = self._prices.get(model)
        if price is None and (snapshot := _SNAPSHOT.match(model)) is not None:
            price = self._prices.get(snapshot.group("base"))
        return price

    def cost(self, usage: Usage, model: str | None) -> Decimal:
        price = self.price_for(model)
        if price is None:
            known = ", ".join(sorted(self._prices)) or "none"
            what = f"model {model!r}" if model is not None else "a reply that named no model"
            raise UnknownModelPriceError(f"The price table has no price for {what} (it prices: {known})", model)
        return price.cost(usage)

    __call__ = cost


def cost_of(response: ChatClientResponse | ChatResponse, prices: PriceHook) -> Decimal:
    """The cost of one reply (a turn's reply carries the usage of all its rounds)."""
    chat = response if isinstance(response, ChatResponse) else response.chat_response
    if chat is None or chat.metadata.usage is None:
        return Decimal(0)
    return prices(chat.metadata.usage, chat.metadata.model)


def totals_of(records: Iterable[tuple[Usage | None, str | None]]) -> UsageTotals:
    """The totals of ``(usage, model)`` pairs (a session log's usage events)."""
    tracker = UsageTracker()
    for usage, model in records:
        tracker.add(usage, model)
    return tracker.totals()
