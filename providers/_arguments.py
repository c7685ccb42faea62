"""A tool call's arguments as the object an API wants back on the next request."""

from __future__ import annotations

from typing import Any

import pydantic_core

__all__ = ["arguments_object"]


def arguments_object(arguments: str) -> dict[str, Any]:
    """The call's arguments (the model's raw string) as a JSON object; empty means ``{}``.
    Unparsable or non-object arguments are sent as ``{}``: the tool loop has already told the
    model, in this call's result, that its arguments were malformed."""
    if not arguments.strip():
        return {}
    try:
        value = pydantic_core.from_json(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
