"""The two MCP failures an application handles: a server it cannot reach, and a protocol error."""

from __future__ import annotations

from ..errors import ChatClientError

__all__ = ["McpConnectionError", "McpProtocolError", "leaf_exception"]


class McpConnectionError(ChatClientError):
    """An MCP server could not be reached or its connection broke; ``server_name`` says which."""

    def __init__(self, server_name: str, cause: BaseException) -> None:
        super().__init__(f"MCP server {server_name!r} is unreachable: {type(cause).__name__}: {cause}")
        self.server_name = server_name
        self.cause = cause


class McpProtocolError(ChatClientError):
    """The server answered with a protocol error (not a tool's ``isError`` result). A hard failure
    by default, as in Spring AI: it says the server or the connection is wrong, not the call; a
    provider built with ``protocol_errors_to_model=True`` tells the model instead."""

    def __init__(self, message: str, *, tool_name: str, server_name: str, code: int) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.server_name = server_name
        self.code = code


def leaf_exception(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (what the SDK's task groups raise)."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if not inner:
            return exc
        exc = inner[0]
