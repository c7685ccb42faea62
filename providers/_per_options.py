"""What a request body takes from its options alone, computed once per options object.

Options are frozen, and the shell hands every request of a spec the same merged object
(``ProviderModel.options_for``), so the option fields of a body (sampling, response format, the
provider's own fields) are the same for each of its requests: a mapping computes them here once
instead of reading a dozen optional fields on every request. Tool definitions are not among them:
a callback may return a new definition from one request to the next (see ``_tool_rendering``).

The values are shared between requests and must be treated as read-only: a mapping copies them
into each request's own body dict.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from chatclient.options import ChatOptions

__all__ = ["PerOptions"]

T = TypeVar("T")


class PerOptions(Generic[T]):
    """``compute(options, variant)``, remembered per options object (by identity) and variant.

    Each entry holds its options, so their id is not reused by another object while the entry lives;
    the table is bounded (emptied when full: an application has a few option sets, a per-request
    ``spec.options(...)`` makes a new one each time and only ever refills it). Safe across threads:
    a lookup that races a clear computes the value again.
    """

    def __init__(self, compute: Callable[[ChatOptions, Hashable], T], maxsize: int = 64) -> None:
        self._compute = compute
        self._maxsize = maxsize
        self._entries: dict[tuple[int, Hashable], tuple[ChatOptions, T]] = {}

    def get(self, options: ChatOptions, variant: Hashable = None) -> T:
        key = (id(options), variant)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is options:
            return entry[1]
        value = self._compute(options, variant)
        if len(self._entries) >= self._maxsize:
            self._entries.clear()
        self._entries[key] = (options, value)
        return value
