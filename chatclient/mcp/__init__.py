"""MCP (Model Context Protocol) for chatclient: remote tools as ordinary tool callbacks.

Needs the extra: ``pip install 'chatclient[mcp]'`` (the official ``mcp`` SDK, loaded only when this
package is imported; ``import chatclient`` never loads it).

    provider = McpToolCallbackProvider(McpServerConnection.http("http://127.0.0.1:8000/mcp", name="weather"))
    client.prompt("Weather in Paris?").tools(provider).call().content()
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401 (fails early, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("chatclient.mcp needs the MCP SDK: pip install 'chatclient[mcp]'") from exc

from .callback import McpMeta, McpToolCallback
from .connection import McpServerConnection
from .errors import McpCallInterruptedError, McpConnectionError, McpProtocolError, McpUnsafeWarning
from .naming import McpToolNaming, sanitise_name
from .provider import AsyncMcpToolCallbackProvider, McpToolCallbackProvider, McpToolFilter, RequireConfirmation
from .server import build_mcp_server, mcp_prompt, mcp_resource, mcp_tool, serve

__all__ = [
    "AsyncMcpToolCallbackProvider",
    "build_mcp_server",
    "mcp_prompt",
    "mcp_resource",
    "mcp_tool",
    "McpCallInterruptedError",
    "McpConnectionError",
    "McpMeta",
    "McpProtocolError",
    "McpServerConnection",
    "McpToolCallback",
    "McpToolCallbackProvider",
    "McpToolFilter",
    "McpToolNaming",
    "McpUnsafeWarning",
    "RequireConfirmation",
    "sanitise_name",
    "serve",
]
