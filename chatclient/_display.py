"""The low-level pieces of short reprs and notebook rendering (markdown and HTML), shared by the
types that render themselves (responses, paused turns, the client, stream events) so that a reader
sees the answer, or what a paused turn waits for, not a dump of the state.

Everything a model or a user wrote is escaped in HTML (``html.escape``) and kept inside code spans
in markdown, so a tool argument ``<script>`` is shown, never run. This module knows no type: each
renderer lives beside its type and imports these helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

__all__ = ["Code", "cell", "clip", "html_code", "md_code"]

_SHORT = 60

Code = Callable[[str], str]
"""Renders a value as inline code: markdown backticks or an escaped HTML ``<code>``."""


def clip(text: str | None, limit: int = _SHORT) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = (text or "").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cell(value: Any) -> str:
    """``value`` as a markdown table cell: pipes escaped, on one line."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_code(value: Any) -> str:
    """A markdown code span that a backtick inside ``value`` cannot close early."""
    text = str(value).replace("\n", " ")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def html_code(value: Any) -> str:
    """An HTML code span, ``value`` escaped."""
    return f"<code>{escape(str(value))}</code>"
