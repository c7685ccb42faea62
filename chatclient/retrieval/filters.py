"""A portable filter over document metadata: one expression that every store evaluates the same way.

Build it in Python::

    (Key("year") >= 2020) & Key("genre").in_(["drama", "crime"]) & ~(Key("draft") == True)

Semantics, identical in every store (the contract suite checks them):

- Two-valued logic. A comparison is true or false, never unknown: a key the document lacks (or whose
  value is ``None``), or a value of another kind than the operand (a number against a string), makes
  ``==``, ``<``, ``<=``, ``>``, ``>=`` and ``in`` false, and ``!=`` and ``not in`` true (they are the
  negations of ``==`` and ``in``). ``~`` negates whatever its operand gives.
- Kinds: numbers (``int`` and ``float``, compared by value), strings (ordered by code point) and
  booleans (``==``/``!=``/``in``/``not in`` only; ``True`` is not the number 1).
- A key is a plain identifier (letters, digits, underscores), so it can be a JSON path in SQL.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, Union

from ..errors import ConfigurationError

__all__ = ["And", "Comparison", "Filter", "Key", "Not", "Operator", "Or", "Scalar", "matches"]

Scalar = Union[str, int, float, bool]  # noqa: UP007
Operator = Literal["==", "!=", "<", "<=", ">", ">=", "in", "not in"]
ORDERING: frozenset[str] = frozenset({"<", "<=", ">", ">="})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class _Combinable:
    """``&``, ``|`` and ``~`` on every filter expression."""

    __slots__ = ()

    def __and__(self, other: Filter) -> And:
        return And((*_flat(And, self), *_flat(And, other)))

    def __or__(self, other: Filter) -> Or:
        return Or((*_flat(Or, self), *_flat(Or, other)))

    def __invert__(self) -> Not:
        return Not(self)  # type: ignore[arg-type]


def kind(value: object) -> str | None:
    """``"bool"``, ``"number"`` or ``"str"``; ``None`` for anything else (missing, ``None``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    return None


def _check_operand(key: str, op: str, value: object) -> None:
    k = kind(value)
    if k is None:
        raise ConfigurationError(
            f"Filter on {key!r}: compare with a str, int, float or bool, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigurationError(f"Filter on {key!r}: the value must be finite, got {value}")
    if k == "bool" and op in ORDERING:
        raise ConfigurationError(f"Filter on {key!r}: booleans support ==, !=, in and not in, not {op}")


@dataclass(frozen=True, slots=True)
class Comparison(_Combinable):
    """``key op value``; for ``in``/``not in`` the value is a non-empty tuple of scalars."""

    key: str
    op: Operator
    value: Scalar | tuple[Scalar, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.fullmatch(self.key):
            raise ConfigurationError(
                f"A filter key must be letters, digits and underscores (not starting with a digit), got {self.key!r}"
            )
        if self.op in ("in", "not in"):
            if not isinstance(self.value, tuple) or not self.value:
                raise ConfigurationError(f"Filter on {self.key!r}: {self.op} needs a non-empty list of values")
            for item in self.value:
                _check_operand(self.key, self.op, item)
        elif self.op in ("==", "!=") or self.op in ORDERING:
            _check_operand(self.key, self.op, self.value)
        else:
            raise ConfigurationError(f"Unknown filter operator {self.op!r}")

    def __repr__(self) -> str:
        return f"Key({self.key!r}) {self.op} {self.value!r}"


@dataclass(frozen=True, slots=True)
class And(_Combinable):
    """True when every operand is."""

    operands: tuple[Filter, ...]

    def __post_init__(self) -> None:
        _check_operands("And", self.operands)


@dataclass(frozen=True, slots=True)
class Or(_Combinable):
    """True when any operand is."""

    operands: tuple[Filter, ...]

    def __post_init__(self) -> None:
        _check_operands("Or", self.operands)


@dataclass(frozen=True, slots=True)
class Not(_Combinable):
    """True when its operand is false."""

    operand: Filter

    def __post_init__(self) -> None:
        _check_operands("Not", (self.operand,))


Filter = Union[Comparison, And, Or, Not]  # noqa: UP007
"""A filter expression: a comparison, or ``And``/``Or``/``Not`` of filter expressions."""


def _flat(group: type[And] | type[Or], expression: object) -> tuple[Filter, ...]:
    """``a & b & c`` is one ``And`` of three, not a nest of pairs."""
    if isinstance(expression, group):
        return expression.operands
    return (expression,)  # type: ignore[return-value]  # checked by And/Or


def _check_operands(name: str, operands: tuple[object, ...]) -> None:
    if not isinstance(operands, tuple) or not operands:
        raise ConfigurationError(f"{name} needs at least one filter expression")
    for operand in operands:
        if not isinstance(operand, (Comparison, And, Or, Not)):
            raise ConfigurationError(
                f"{name} combines filter expressions (Key(...) comparisons, And, Or, Not), got {operand!r}"
            )


class Key:
    """A metadata key, to compare: ``Key("year") >= 2020``, ``Key("genre").in_(["a", "b"])``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: Scalar) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, "==", value)

    def __ne__(self, value: Scalar) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, "!=", value)

    def __lt__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, "<", value)

    def __le__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, "<=", value)

    def __gt__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, ">", value)

    def __ge__(self, value: Scalar) -> Comparison:
        return Comparison(self.name, ">=", value)

    __hash__ = None  # type: ignore[assignment]  # == builds a filter, so a Key is no dict key

    def in_(self, values: Iterable[Scalar]) -> Comparison:
        return Comparison(self.name, "in", _values(values))

    def not_in(self, values: Iterable[Scalar]) -> Comparison:
        return Comparison(self.name, "not in", _values(values))

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


def _values(values: Iterable[Scalar]) -> tuple[Scalar, ...]:
    if isinstance(values, (str, bytes)):
        raise ConfigurationError(f"in/not in take a list of values, got the string {values!r}")
    return tuple(values)


def _equal(a: object, b: Scalar) -> bool:
    ka = kind(a)
    return ka is not None and ka == kind(b) and a == b


def _compare(op: str, actual: object, value: Scalar) -> bool:
    if op == "==":
        return _equal(actual, value)
    if op == "!=":
        return not _equal(actual, value)
    ka = kind(actual)
    if ka is None or ka != kind(value) or ka == "bool":
        return False
    a, b = actual, value
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    return a >= b  # type: ignore[operator]


def matches(expression: Filter, metadata: Mapping[str, object]) -> bool:
    """Whether a document with ``metadata`` passes ``expression`` (the reference semantics)."""
    if isinstance(expression, Comparison):
        actual = metadata.get(expression.key)
        if expression.op in ("in", "not in"):
            found = any(_equal(actual, v) for v in expression.value)  # type: ignore[union-attr]
            return found if expression.op == "in" else not found
        return _compare(expression.op, actual, expression.value)  # type: ignore[arg-type]
    if isinstance(expression, And):
        return all(matches(e, metadata) for e in expression.operands)
    if isinstance(expression, Or):
        return any(matches(e, metadata) for e in expression.operands)
    return not matches(expression.operand, metadata)
