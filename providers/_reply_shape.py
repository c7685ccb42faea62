"""Shape checks for a non-streamed reply, shared by the four parsers: a malformed reply is reported
by what is wrong with it (``'choices' is a string, not a list``), never by the parser's own
exception (``'str' object has no attribute 'get'``), which says nothing about the reply."""

from __future__ import annotations

from typing import Any

from chatclient.errors import MalformedResponseError

__all__ = ["as_list", "as_object", "json_kind", "optional_object", "shape_error"]


def json_kind(value: Any) -> str:
    """What ``value`` is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def shape_error(provider: str, where: str, value: Any, expected: str, body: object) -> MalformedResponseError:
    """``where`` (``'choices'``, ``choices[0].message``) is not ``expected`` (``a list``)."""
    found = "missing" if value is None else json_kind(value)
    return MalformedResponseError(f"Malformed reply: {where} is {found}, not {expected}", provider=provider, body=body)


def as_list(value: Any, where: str, provider: str, body: object) -> list[Any]:
    if isinstance(value, list):
        return value
    raise shape_error(provider, where, value, "a list", body)


def as_object(value: Any, where: str, provider: str, body: object) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise shape_error(provider, where, value, "an object", body)


def optional_object(value: Any, where: str, provider: str, body: object) -> dict[str, Any] | None:
    """An object or absent (``usage`` on a server that does not count)."""
    if value is None or isinstance(value, dict):
        return value
    raise shape_error(provider, where, value, "an object", body)
