"""Bounds on what an MCP server can put into the requests: its tool listing and its results.

A remote server decides how much it lists and how big its answers are. Without bounds a server
listing 302 tools with a 1.2 MB description puts all of it into every request, and a 30 MB text
result goes whole into the next one (slow, costly, and over every provider's context window).

- Listing (:class:`ListingLimits`): past ``max_tools_per_server`` only the first tools a server lists
  are offered; a description past ``max_description_chars`` is cut, with a marker; a tool whose input
  schema is over ``max_schema_chars`` (as compact JSON) is left out (half a schema is no schema).
  Each cut is reported with an ``McpUnsafeWarning``, one per server and kind.
- Results (:class:`ResultLimits`): text beyond the bound is cut with a marker saying how much was
  left out; an image or file past the byte bound is replaced by a note. The full sizes go into the
  result's metadata (kept for the application, never sent to the model).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from pydantic import JsonValue

from ..messages import FilePart, ImagePart, JsonPart, TextPart, ToolResult, ToolResultPart
from .errors import McpUnsafeWarning

__all__ = [
    "DEFAULT_MAX_DESCRIPTION_CHARS",
    "DEFAULT_MAX_MEDIA_BYTES",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_SCHEMA_CHARS",
    "DEFAULT_MAX_TOOLS_PER_SERVER",
    "ListingLimits",
    "ResultLimits",
    "limit_result",
]

T = TypeVar("T")

DEFAULT_MAX_RESULT_CHARS = 100_000
"""Characters of text (text and JSON parts together) one tool result may put into the prompt."""
DEFAULT_MAX_MEDIA_BYTES = 5_000_000
"""Bytes of images and files (decoded) one tool result may carry: the smallest provider bound per image."""
DEFAULT_MAX_TOOLS_PER_SERVER = 128
"""Tools offered from one server: OpenAI's bound on the tools of one request."""
DEFAULT_MAX_DESCRIPTION_CHARS = 4_000
"""Characters of one tool's description: several times a thorough one, far from a context window."""
DEFAULT_MAX_SCHEMA_CHARS = 32_000
"""Characters of one tool's input schema as compact JSON: room for large nested argument models."""


def _check_bounds(limits: Any) -> None:
    """Every field of ``limits`` is a non-negative int or ``None``."""
    for field in fields(limits):
        value = getattr(limits, field.name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{field.name} must be a non-negative int or None, not {value!r}")


@dataclass(frozen=True, slots=True)
class ListingLimits:
    """What one server's tool listing may put into every request; ``None`` for no bound."""

    max_tools_per_server: int | None = DEFAULT_MAX_TOOLS_PER_SERVER
    max_description_chars: int | None = DEFAULT_MAX_DESCRIPTION_CHARS
    max_schema_chars: int | None = DEFAULT_MAX_SCHEMA_CHARS

    def __post_init__(self) -> None:
        _check_bounds(self)

    def schema_fits(self, server_name: str, tool: Any) -> bool:
        """Whether ``tool``'s input schema is within bounds; one that is not is left out, with a warning."""
        limit = self.max_schema_chars
        if limit is None:
            return True
        size = len(json.dumps(tool.input_schema or {}, separators=(",", ":"), ensure_ascii=False, default=str))
        if size <= limit:
            return True
        warnings.warn(
            f"MCP tool {tool.name!r} of server {server_name!r} is left out: its input schema has {size:,} "
            f"characters, over max_schema_chars={limit:,}",
            McpUnsafeWarning,
            stacklevel=3,
        )
        return False

    def first_tools(self, server_name: str, tools: Sequence[T]) -> Sequence[T]:
        """The first ``max_tools_per_server`` of ``tools`` (in the server's order), with a warning when cut."""
        limit = self.max_tools_per_server
        if limit is None or len(tools) <= limit:
            return tools
        warnings.warn(
            f"MCP server {server_name!r} offers {len(tools):,} tools, over max_tools_per_server={limit:,}: only "
            f"its first {limit:,} are offered (a tool_filter chooses which)",
            McpUnsafeWarning,
            stacklevel=3,
        )
        return tools[:limit]

    def descriptions(self, server_name: str, tools: Sequence[Any]) -> list[str]:
        """Each tool's description (or title, or name), cut past ``max_description_chars`` with a
        marker; one warning names the tools cut."""
        limit = self.max_description_chars
        described = [tool.description or tool.title or tool.name for tool in tools]
        if limit is None:
            return described
        cut = [tool.name for tool, text in zip(tools, described, strict=True) if len(text) > limit]
        if not cut:
            return described
        warnings.warn(
            f"MCP server {server_name!r}: the description of {len(cut)} tool(s) is over "
            f"max_description_chars={limit:,} and was cut: {cut[:5]}{' ...' if len(cut) > 5 else ''}",
            McpUnsafeWarning,
            stacklevel=3,
        )
        return [
            text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit:,} characters cut]"
            for text in described
        ]


@dataclass(frozen=True, slots=True)
class ResultLimits:
    """``None`` for no bound."""

    max_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    max_media_bytes: int | None = DEFAULT_MAX_MEDIA_BYTES

    def __post_init__(self) -> None:
        _check_bounds(self)


def limit_result(result: ToolResult, limits: ResultLimits) -> ToolResult:
    """``result`` itself when within ``limits``; else a copy with text cut and media dropped, noted
    in the parts the model reads and in ``metadata["result_cut"]``."""
    chars = limits.max_chars
    media = limits.max_media_bytes
    text_total = 0
    media_total = 0
    for part in result.parts:
        if isinstance(part, TextPart):
            text_total += len(part.text)
        elif isinstance(part, JsonPart):
            text_total += 0 if chars is None else len(part.as_text())
        elif part.data is not None:
            media_total += _decoded_size(part.data)
    if (chars is None or text_total <= chars) and (media is None or media_total <= media):
        return result
    return _cut(result, limits)


def _cut(result: ToolResult, limits: ResultLimits) -> ToolResult:
    text_total = 0
    text_left = limits.max_chars
    media_left = limits.max_media_bytes
    parts: list[ToolResultPart] = []
    dropped: list[JsonValue] = []
    for part in result.parts:
        if isinstance(part, (TextPart, JsonPart)):
            text = part.text if isinstance(part, TextPart) else part.as_text()
            text_total += len(text)
            if text_left is None or len(text) <= text_left:
                parts.append(part)
                text_left = None if text_left is None else text_left - len(text)
                continue
            kept = text[:text_left]
            parts.append(
                TextPart(
                    f"{kept}\n[... {len(text) - len(kept):,} of {len(text):,} characters cut: the result is over "
                    f"the {limits.max_chars:,}-character limit for MCP tool results]"
                )
            )
            text_left = 0
        else:
            size = _decoded_size(part.data) if part.data is not None else 0
            if media_left is None or size <= media_left:
                parts.append(part)
                media_left = None if media_left is None else media_left - size
                continue
            kind = "image" if isinstance(part, ImagePart) else "file"
            name = f" {part.filename}" if isinstance(part, FilePart) and part.filename else ""
            parts.append(
                TextPart(
                    f"[{kind}{name} ({part.media_type}, {size:,} bytes) left out: over the {limits.max_media_bytes:,}"
                    "-byte limit for media in MCP tool results]"
                )
            )
            dropped.append({"kind": kind, "media_type": part.media_type, "bytes": size})
    cut: dict[str, JsonValue] = {"text_chars": text_total}
    if limits.max_chars is not None and text_total > limits.max_chars:
        cut["text_chars_kept"] = limits.max_chars
    if dropped:
        cut["media_dropped"] = dropped
    return ToolResult(parts, metadata={**result.metadata, "result_cut": cut}, is_error=result.is_error)


def _decoded_size(data: str) -> int:
    """The byte size of base64 ``data`` without decoding it."""
    return len(data) * 3 // 4 - data[-2:].count("=")
