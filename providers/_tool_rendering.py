"""The wire form of a request's tool definitions, rendered once per tool set and reused.

A tool loop sends the same definitions on every round, and a client sends the same ones on every
call; with 50 tools, rebuilding 50 dicts (and, in strict mode, deep-copying 50 schemas) each time
was a large share of what a call costs over a hand-built request (issue 17). Every provider renders
its tools through :data:`TOOL_RENDERINGS`, one bounded cache shared by all of them.

What the key is, and why:

- **The identity of each** ``ToolDefinition``, read from the callbacks on every request. Not the
  identity of the tuple of callbacks: options are rebuilt (and their tuple with them) whenever they
  are merged, and a dynamic provider returns a new list per request, so a tuple key would miss where
  it matters; and a callback may return a new definition (a new description, a new schema) from one
  request to the next, which a key on the callbacks would never notice. Definitions are frozen, so
  the same object always renders the same; an entry holds its definitions, so their ids cannot be
  reused by other objects while it lives.
- **The renderer**: each provider's own function (a module-level function, one identity).
- **A variant**: every option the rendering depends on (OpenAI's ``strict_tools``, Anthropic's
  ``cache_tools``), so changing it never returns the other rendering.

The rendered dicts are shared between requests and must be treated as read-only; each caller gets
its own list, so replacing or appending items in ``body["tools"]`` is safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from operator import attrgetter
from typing import Any

from chatclient.tools.callback import ToolCallback
from chatclient.tools.definition import ToolDefinition

__all__ = ["TOOL_RENDERINGS", "Renderer", "ToolRenderingCache"]

Renderer = Callable[[Sequence[ToolDefinition], Any], list[dict[str, Any]]]
"""``render(definitions, variant)``: the wire list of one provider, a pure function of its inputs."""

_definition = attrgetter("definition")


class ToolRenderingCache:
    """A bounded, thread-safe LRU of rendered tool lists, keyed by renderer, variant and definitions.

    ``maxsize`` bounds the number of tool sets kept (an application has a few: its clients, its
    specs, a provider's current tools); a dynamic source that makes new definitions on every
    request only ever evicts the oldest entries.
    """

    def __init__(self, maxsize: int = 64) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple[Hashable, ...], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        """Counters for tests and profiling (updated under the lock)."""

    def render(
        self, callbacks: Sequence[ToolCallback], render: Renderer, variant: Hashable = None
    ) -> list[dict[str, Any]]:
        """``render(definitions, variant)`` for the definitions of ``callbacks``, from the cache when
        the same definitions were rendered the same way before; a new list each call."""
        definitions = tuple(map(_definition, callbacks))
        key = (render, variant, *map(id, definitions))
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return list(entry.rendered)
            self.misses += 1
        # Rendered outside the lock: two threads may both render a new set, and both are right.
        rendered = render(definitions, variant)
        with self._lock:
            self._entries[key] = _Entry(definitions, rendered)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return list(rendered)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


class _Entry:
    __slots__ = ("definitions", "rendered")

    def __init__(self, definitions: tuple[ToolDefinition, ...], rendered: list[dict[str, Any]]) -> None:
        self.definitions = definitions
        """Kept alive so that the ids in the key stay theirs."""
        self.rendered = rendered


TOOL_RENDERINGS = ToolRenderingCache()
"""The cache every built-in provider renders its tools through."""
