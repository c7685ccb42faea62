"""The names the model sees for MCP tools: valid everywhere, deterministic, never silently merged.

MCP allows 128 characters and dots; providers allow ``[A-Za-z0-9_-]{1,64}``. A name that needs no
change is kept as it is. Otherwise it is sanitised and gets ``_`` plus 8 hex digits of a hash of the
full original name (so ``"東京"`` and ``"大阪"``, or ``a.b`` and ``a_b``, stay distinct), cut to 64
characters before that suffix when too long; two instances (and a resumed turn) always agree. The
callback still calls the tool by its original name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ConfigurationError

__all__ = ["MAX_NAME_LENGTH", "McpToolNaming", "check_no_collisions", "sanitise_name"]

MAX_NAME_LENGTH = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def sanitise_name(name: str) -> str:
    """``name`` itself when providers accept it; else with every character they reject replaced by
    ``_``, at most 64 characters, ending in a hash of ``name`` (replacing alone would merge names)."""
    clean = _INVALID.sub("_", name)
    if clean == name and 0 < len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{clean[: MAX_NAME_LENGTH - 9]}_{digest}"


class McpToolNaming:
    """How an MCP tool's exposed name is made from ``(server name, tool name)``; always sanitised."""

    __slots__ = ("_make", "description")

    def __init__(self, make: Callable[[str, str], str], description: str) -> None:
        self._make = make
        self.description = description

    def __call__(self, server_name: str, tool_name: str) -> str:
        return sanitise_name(self._make(server_name, tool_name))

    def __repr__(self) -> str:
        return f"McpToolNaming.{self.description}"

    @classmethod
    def as_is(cls) -> McpToolNaming:
        """The tool's own name (the default); a collision between servers is an error."""
        return cls(lambda _server, name: name, "as_is()")

    @classmethod
    def server_prefix(cls, separator: str = "_") -> McpToolNaming:
        """``<server><separator><tool>``: ``weather_forecast``."""
        return cls(lambda server, name: f"{server}{separator}{name}", f"server_prefix({separator!r})")


def check_no_collisions(named: Iterable[tuple[str, str, str]], naming: Any) -> None:
    """Raise when two ``(exposed, server, original)`` tools share an exposed name, naming both."""
    seen: dict[str, tuple[str, str]] = {}
    for exposed, server, original in named:
        other = seen.get(exposed)
        if other is not None:
            raise ConfigurationError(
                f"MCP tool name {exposed!r} is exposed twice: tool {other[1]!r} of server {other[0]!r} and "
                f"tool {original!r} of server {server!r} (naming {naming!r}); use McpToolNaming.server_prefix() "
                "or a tool filter"
            )
        seen[exposed] = (server, original)
