"""A bound on how much of one MCP tool result reaches the next prompt.

A remote server decides how big its answers are; without a bound a 30 MB text result goes whole
into the next request (slow, costly, and over every provider's context window). Text beyond the
bound is cut with a marker saying how much was left out; an image or file past the byte bound is
replaced by a note. The full sizes go into the result's metadata (kept for the application, never
sent to the model).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from ..messages import FilePart, ImagePart, JsonPart, TextPart, ToolResult, ToolResultPart

__all__ = ["DEFAULT_MAX_MEDIA_BYTES", "DEFAULT_MAX_RESULT_CHARS", "ResultLimits", "limit_result"]

DEFAULT_MAX_RESULT_CHARS = 100_000
"""Characters of text (text and JSON parts together) one tool result may put into the prompt."""
DEFAULT_MAX_MEDIA_BYTES = 5_000_000
"""Bytes of images and files (decoded) one tool result may carry: the smallest provider bound per image."""


@dataclass(frozen=True, slots=True)
class ResultLimits:
    """``None`` for no bound."""

    max_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    max_media_bytes: int | None = DEFAULT_MAX_MEDIA_BYTES

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_media_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative int or None, not {value!r}")


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
