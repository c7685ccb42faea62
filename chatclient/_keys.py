"""The one rule for ids a store keys on (conversation ids, pending-state ids): every backend
accepts the same ones, and a bad one is refused before any model call rather than by a driver
after it (PostgreSQL refuses NUL and index entries over a few kilobytes; the others take anything)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .errors import ConfigurationError

__all__ = ["MAX_KEY_BYTES", "key_check"]

MAX_KEY_BYTES: Final = 512
"""The longest id a store accepts, in UTF-8 bytes."""


def key_check(what: str) -> Callable[[Any], str]:
    """The check for one kind of id (``what`` names it in the error), as one function: it runs on
    every turn, so it costs one call."""

    def check(value: Any) -> str:
        """``value`` if it is a usable id: a non-blank string, no NUL, at most ``MAX_KEY_BYTES`` bytes."""
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(f"{what} must be a non-empty string, got {value!r}")
        if "\x00" in value:
            raise ConfigurationError(f"{what} must not contain a NUL character, got {value!r}")
        if len(value) > MAX_KEY_BYTES // 4:  # up to 4 bytes a character: only a long id needs encoding
            try:
                size = len(value.encode())
            except UnicodeEncodeError:
                raise ConfigurationError(f"{what} is not valid Unicode (a lone surrogate): {value[:40]!r}…") from None
            if size > MAX_KEY_BYTES:
                raise ConfigurationError(
                    f"{what} is {size} bytes in UTF-8, over the limit of {MAX_KEY_BYTES}: {value[:40]!r}…"
                )
        return value

    return check
