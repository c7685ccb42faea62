"""The two MCP failures an application handles: a server it cannot reach, and a protocol error."""

from __future__ import annotations

from ..errors import ChatClientError, ToolExecutionError

__all__ = [
    "McpCallInterruptedError",
    "McpConnectionError",
    "McpProtocolError",
    "McpUnsafeWarning",
    "leaf_exception",
]


class McpConnectionError(ChatClientError):
    """An MCP server could not be reached or its connection broke; ``server_name`` says which."""

    def __init__(self, server_name: str, cause: BaseException) -> None:
        super().__init__(f"MCP server {server_name!r} is unreachable: {type(cause).__name__}: {cause}")
        self.server_name = server_name
        self.cause = cause


class McpCallInterruptedError(McpConnectionError, ToolExecutionError):
    """The connection broke while a tool call was under way (or before it could be sent).

    Both an :class:`McpConnectionError` and a tool failure, so the loop's tool error handling
    applies: by default the model is told, and ``DefaultToolExceptionProcessor(rethrow=(McpConnectionError,))``
    aborts the request with this error instead. The provider reconnects on the next request.
    """

    def __init__(self, server_name: str, cause: BaseException, *, tool_name: str) -> None:
        ChatClientError.__init__(
            self,
            f"MCP server {server_name!r} lost the connection during tool {tool_name!r} "
            f"({type(cause).__name__}: {cause}); the next request reconnects",
        )
        self.server_name = server_name
        self.cause = cause
        self.tool_name = tool_name
        self.call_id = None


class McpProtocolError(ChatClientError):
    """The server answered with a protocol error (not a tool's ``isError`` result). A hard failure
    by default, as in Spring AI: it says the server or the connection is wrong, not the call; a
    provider built with ``protocol_errors_to_model=True`` tells the model instead."""

    def __init__(self, message: str, *, tool_name: str, server_name: str, code: int) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.server_name = server_name
        self.code = code


class McpUnsafeWarning(UserWarning):
    """An MCP setup that exposes more than it should (a server on a public address without auth, a
    ``_meta`` value that cannot be sent), or a server listing more than the provider's bounds (tools,
    description, schema: what was cut). A warning, not a log line: logging is silent by default."""


def leaf_exception(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (what the SDK's task groups raise)."""
    while True:
        inner = getattr(exc, "exceptions", None)
        if not inner:
            return exc
        exc = inner[0]
