"""An MCP ``CallToolResult`` as a chatclient ``ToolResult``: one mapping for every provider."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from .._trusted import trusted
from ..messages import FilePart, ImagePart, JsonPart, TextPart, ToolResult, ToolResultPart
from .limits import ResultLimits, limit_result

__all__ = ["to_tool_result"]


def to_tool_result(result: Any, *, server_name: str, tool_name: str, limits: ResultLimits | None = None) -> ToolResult:
    """Text blocks as text, images as images, audio and blobs as files, resources inline or as links.

    Structured content becomes a ``JsonPart`` when the result has no text; with text (servers send
    both, the text a rendering of the same value) it is kept in the metadata, so the model reads the
    value once. ``is_error`` results stay errors: the model is told and the loop continues.

    Built from checked values (the SDK validated the result; text parts are built from its strings, the
    others validated as usual), so a tool call does not validate its result a second time. ``limits``
    bound what reaches the prompt (:func:`~chatclient.mcp.limits.limit_result`).
    """
    content = result.content
    parts = (_part(content[0]),) if len(content) == 1 else tuple(_part(block) for block in content)
    metadata: dict[str, JsonValue] = {"mcp_server": server_name, "mcp_tool": tool_name}
    structured = result.structured_content
    if structured is not None:
        has_text = isinstance(parts[0], TextPart) if len(parts) == 1 else any(isinstance(p, TextPart) for p in parts)
        if has_text:
            metadata["structured_content"] = structured
        else:
            parts = (*parts, JsonPart(structured))
    converted = trusted(ToolResult, {"parts": parts, "metadata": metadata, "is_error": bool(result.is_error)})
    return converted if limits is None else limit_result(converted, limits)


def _part(block: Any) -> ToolResultPart:
    kind = getattr(block, "type", None)
    if kind == "text":
        return _text(block.text)
    if kind == "image":
        return ImagePart(data=block.data, media_type=block.mime_type)
    if kind == "audio":
        return FilePart(data=block.data, media_type=block.mime_type)
    if kind == "resource":
        return _resource(block.resource)
    if kind == "resource_link":
        return TextPart(f"{block.uri} ({block.name})")
    return TextPart(f"[unsupported MCP content: {kind}]")


def _resource(resource: Any) -> ToolResultPart:
    text = getattr(resource, "text", None)
    if text is not None:
        return _text(text)
    media_type = resource.mime_type or "application/octet-stream"
    if media_type.startswith("image/"):
        return ImagePart(data=resource.blob, media_type=media_type)
    return FilePart(data=resource.blob, media_type=media_type, filename=str(resource.uri))


def _text(text: str) -> TextPart:
    """A text part from the SDK's own validated string."""
    return trusted(TextPart, {"type": "text", "text": text})
