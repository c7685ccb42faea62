"""From what a tool returned to what the model is sent, and the model's arguments as a tool sees them.

The rules live here, once, so a ``FunctionToolCallback`` and a hand-written ``ToolCallback`` (an MCP
tool, a user's own class) are treated alike by the ``ToolCallingManager``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeAlias

from pydantic_core import PydanticSerializationError, to_json

from ..errors import ToolExecutionError
from ..messages import ToolResult

__all__ = [
    "DONE_TEXT",
    "ResultConverter",
    "convert_result",
    "default_result_converter",
    "normalize_arguments",
    "tool_execution_error",
]

DONE_TEXT = "Done"
"""What the model is told when a tool ran and returned nothing (``None``): it succeeded, as in Spring AI."""

ResultConverter: TypeAlias = Callable[[Any], str | ToolResult]
"""Turns what a tool returned into the text (or the structured ``ToolResult``) the model is sent."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def normalize_arguments(arguments: str) -> str:
    """The model's raw arguments, with "no arguments" always spelled ``{}``.

    Models call a tool without parameters with ``""``, whitespace or ``null`` (and providers turn a
    missing field into ``""``); every callback should see one JSON object, whoever wrote it.
    """
    stripped = arguments.strip()
    return "{}" if not stripped or stripped == "null" else arguments


def default_result_converter(value: Any) -> str | ToolResult:
    """Strings and ``ToolResult`` values as they are; ``None`` as :data:`DONE_TEXT`; everything else as JSON.

    Models, dataclasses, dicts, lists, dates and numbers are JSON already; any other object is
    serialised by its public attributes (instance attributes and slots not starting with ``_``), as
    Jackson serialises a bean in Spring AI. An object with no public attributes is sent as its own
    ``str()`` if its class defines one; otherwise it cannot be sent and this raises ``TypeError``,
    never falling back to a ``<... object at 0x...>`` text that tells the model nothing.
    """
    if isinstance(value, (str, ToolResult)):
        return value
    if value is None:
        return DONE_TEXT
    try:
        return to_json(value, fallback=_public_attributes).decode()
    except PydanticSerializationError as exc:
        # "Error serializing to JSON: TypeError: ..." -> the part after the wrapper's prefix.
        raise TypeError(str(exc).removeprefix("Error serializing to JSON: ")) from exc


def convert_result(
    tool_name: str, value: Any, converter: ResultConverter = default_result_converter
) -> str | ToolResult:
    """``converter(value)``; a failure is the tool's error (it ran, but what it returned cannot be sent).

    A ``ToolResult`` is passed through without the converter: it is already what the model is sent.
    """
    if isinstance(value, ToolResult):
        return value
    try:
        result = converter(value)
    except Exception as exc:
        raise _unsendable(tool_name, exc) from exc
    if not isinstance(result, (str, ToolResult)):
        raise _unsendable(tool_name, TypeError(f"the result converter returned a {type(result).__name__}"))
    return result


def _unsendable(tool_name: str, exc: Exception) -> ToolExecutionError:
    return ToolExecutionError(
        f"Tool '{tool_name}' ran, but its result cannot be sent to the model: {exc}. "
        "Return a str, dict, list, dataclass, pydantic model or ToolResult, or give the tool a result converter.",
        tool_name=tool_name,
    )


def _public_attributes(obj: Any) -> Any:
    """The JSON fallback for objects pydantic does not know: their public attributes, else their ``str()``."""
    attributes = {name: value for name, value in getattr(obj, "__dict__", {}).items() if not name.startswith("_")}
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if not name.startswith("_") and name not in attributes and hasattr(obj, name):
                attributes[name] = getattr(obj, name)
    if attributes:
        return attributes
    cls = type(obj)
    if _defines(cls, "__str__") or _defines(cls, "__repr__"):
        text = str(obj)
        if not _ADDRESS.search(text):
            return text
    raise TypeError(f"a {cls.__qualname__} object has no public attributes to send")


def _defines(cls: type, method: str) -> bool:
    """Whether ``cls`` (or a base other than ``object``) overrides ``object``'s ``method``."""
    return getattr(cls, method) is not getattr(object, method)


def tool_execution_error(tool_name: str, exc: Exception) -> ToolExecutionError:
    """The error (and text for the model) for a tool body that raised ``exc``."""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return ToolExecutionError(f"Tool '{tool_name}' failed with {detail}", tool_name=tool_name)
