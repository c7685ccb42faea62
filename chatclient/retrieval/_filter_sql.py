"""The portable filter as a SQL condition over a JSON metadata column, for SQLite and PostgreSQL.

Each comparison becomes an atom that is true or false, never NULL (``COALESCE(…, FALSE)``), so
``NOT``/``AND``/``OR`` keep the two-valued semantics of :func:`.filters.matches`. An atom first checks
the JSON kind of the value (number, string, boolean) and only then compares, inside ``CASE`` on
PostgreSQL so a string is never cast to a number. Strings compare by code point: SQLite's BINARY
collation, PostgreSQL's ``COLLATE "C"``. Keys and values are parameters; nothing is pasted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .filters import And, Comparison, Filter, Not, Or, Scalar, kind

__all__ = ["POSTGRES", "SQLITE", "Dialect", "to_sql"]


@dataclass(frozen=True)
class Dialect:
    mark: str  # the driver's placeholder
    false: str

    def atom(self, column: str, key: str, op: str, value: Scalar) -> tuple[str, list[Any]]:
        raise NotImplementedError


class _Sqlite(Dialect):
    def atom(self, column: str, key: str, op: str, value: Scalar) -> tuple[str, list[Any]]:
        path = f"$.{key}"
        k = kind(value)
        if k == "bool":
            return f"json_type({column}, ?) = ?", [path, "true" if value else "false"]
        if k == "str" and op == "=":  # a JSON number or boolean comes out of json_extract as no TEXT
            return f"json_extract({column}, ?) = ?", [path, value]
        types = "('integer', 'real')" if k == "number" else "('text')"
        return f"(json_type({column}, ?) IN {types} AND json_extract({column}, ?) {op} ?)", [path, path, value]


class _Postgres(Dialect):
    def atom(self, column: str, key: str, op: str, value: Scalar) -> tuple[str, list[Any]]:
        k = kind(value)
        if op == "=":  # jsonb containment of one key: equal value of the same JSON kind (1 is not true)
            return f"{column} @> %s::jsonb", [json.dumps({key: value})]
        if k == "number":
            return (
                f"CASE WHEN jsonb_typeof({column} -> %s) = 'number' "
                f"THEN ({column} -> %s)::numeric {op} %s::numeric ELSE FALSE END",
                [key, key, value],
            )
        return (
            f"CASE WHEN jsonb_typeof({column} -> %s) = 'string' "
            f'THEN ({column} ->> %s) COLLATE "C" {op} %s::text COLLATE "C" ELSE FALSE END',
            [key, key, value],
        )


SQLITE: Dialect = _Sqlite("?", "0")
POSTGRES: Dialect = _Postgres("%s", "FALSE")
_SQL_OP = {"==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _comparison(dialect: Dialect, column: str, c: Comparison) -> tuple[str, list[Any]]:
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    op = "==" if c.op in ("!=", "in", "not in") else c.op
    parts, params = [], []
    for value in values:
        sql, p = dialect.atom(column, c.key, _SQL_OP[op], value)
        parts.append(f"COALESCE({sql}, {dialect.false})")
        params += p
    sql = parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"
    return (f"NOT {sql}" if c.op in ("!=", "not in") else sql), params


def to_sql(dialect: Dialect, expression: Filter, column: str = "metadata") -> tuple[str, list[Any]]:
    """``expression`` as a condition on ``column`` and its parameters, in order."""
    if isinstance(expression, Comparison):
        return _comparison(dialect, column, expression)
    if isinstance(expression, Not):
        sql, params = to_sql(dialect, expression.operand, column)
        return f"NOT ({sql})", params
    joiner = " AND " if isinstance(expression, And) else " OR "
    assert isinstance(expression, (And, Or))
    parts, params = [], []
    for operand in expression.operands:
        sql, p = to_sql(dialect, operand, column)
        parts.append(f"({sql})")
        params += p
    return joiner.join(parts), params
