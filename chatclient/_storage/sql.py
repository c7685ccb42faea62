"""SQL written once for every driver: a *flow* is a generator that yields ``(sql, params)`` and
receives the rows, so the same logic runs on a ``sqlite3`` connection, a psycopg connection or a
psycopg async connection; the backend only supplies the transaction and the driver call."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from ..errors import ConfigurationError

__all__ = ["Flow", "Rows", "Statement", "arun_flow", "check_prefix", "run_flow"]

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
Statement = tuple[str, tuple[Any, ...]]
Flow = Generator[Statement, Rows, T]

_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,40}")


def check_prefix(prefix: str) -> str:
    """A table prefix is pasted into SQL, so only a plain identifier is accepted."""
    if not _PREFIX.fullmatch(prefix):
        raise ConfigurationError(f"A table prefix must be letters, digits and underscores, got {prefix!r}")
    return prefix


def run_flow(flow: Flow[T], execute: Callable[[Statement], Rows]) -> T:
    """Drive ``flow`` with a blocking driver call."""
    try:
        statement = next(flow)
    except StopIteration as done:  # a flow with nothing to ask
        return done.value  # type: ignore[no-any-return]
    while True:
        rows = execute(statement)
        try:
            statement = flow.send(rows)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


async def arun_flow(flow: Flow[T], execute: Callable[[Statement], Awaitable[Rows]]) -> T:
    """Drive ``flow`` with an async driver call."""
    try:
        statement = next(flow)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    while True:
        rows = await execute(statement)
        try:
            statement = flow.send(rows)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
