"""Where an MCP server lives (Streamable HTTP, a stdio child, or this process) and one live session to it.

A session is owned by one task on one event loop: the SDK's client must be entered and exited in
the same task, so an owner task holds it open and every call comes from other tasks of that loop.
Connect failures (nested exception groups from the SDK's task groups, a missing command) become one
:class:`McpConnectionError` naming the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TextIO

from .._redact import MASK, install_log_redaction, redact_mapping, redact_url
from ..errors import ToolExecutionError
from .errors import McpCallInterruptedError, McpConnectionError, McpProtocolError, leaf_exception

__all__ = ["McpServerConnection", "McpSession"]

_REQUEST_TIMEOUT = -32001
_CONNECTION_CLOSED = -32000
_INVALID_REQUEST = -32600
_INTERNAL_ERROR = -32603
_SESSION_GONE = ("Session not found", "Session terminated")
"""What a stateful server answers (HTTP 404) for a session it no longer has: it restarted."""
_HTTP_ERROR_STAND_IN = "Server returned an error response"
"""The SDK's error for an HTTP 5xx without a JSON-RPC body (a server going down answers so)."""
_MAX_PAGES = 100
_MAX_RELISTENS = 20
_log = logging.getLogger(__name__)
install_log_redaction("mcp.client.streamable_http", "mcp.client.sse", "httpx2")


def _announces_tool_changes(client: Any) -> bool:
    """A modern connection whose server advertises ``tools.listChanged`` (legacy ones notify instead)."""
    tools = getattr(client.server_capabilities, "tools", None)
    return bool(tools and tools.list_changed) and str(client.protocol_version) >= "2026-07-28"


@dataclass(frozen=True)
class McpServerConnection:
    """An MCP server to connect to; ``name`` identifies it in tool names, errors and pending state."""

    name: str
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    headers: Mapping[str, str] | None = None
    mode: str = "auto"
    """``"auto"`` (the newest protocol, falling back) or ``"legacy"`` (the initialize handshake)."""
    call_timeout_s: float = 60.0
    """Per tool call, resource read and prompt, on every transport (stdio has none of its own)."""
    connect_timeout_s: float = 10.0
    """For opening the connection (transport and handshake) and for each listing of its tools: a
    server that accepts and never answers, or a child that never speaks MCP, fails in this time."""
    errlog: TextIO | None = field(default=None, compare=False)
    server: Any = field(default=None, compare=False)
    """An in-process server object (see :meth:`in_process`)."""

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        mode: str = "auto",
        call_timeout_s: float = 60.0,
        connect_timeout_s: float = 10.0,
    ) -> McpServerConnection:
        """A Streamable HTTP server (``http://127.0.0.1:8000/mcp``)."""
        return cls(
            name=name, url=url, headers=headers, mode=mode, call_timeout_s=call_timeout_s,
            connect_timeout_s=connect_timeout_s,
        )  # fmt: skip

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        name: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        errlog: TextIO | None = None,
        call_timeout_s: float = 60.0,
        connect_timeout_s: float = 10.0,
    ) -> McpServerConnection:
        """A server run as a child process speaking MCP on its stdin/stdout. The child gets the SDK's
        short environment allow-list plus ``env``: pass secrets explicitly."""
        return cls(
            name=name, command=command, args=tuple(args), env=env, cwd=cwd, errlog=errlog,
            call_timeout_s=call_timeout_s, connect_timeout_s=connect_timeout_s,
        )  # fmt: skip

    @classmethod
    def in_process(
        cls, server: Any, *, name: str, mode: str = "auto", call_timeout_s: float = 60.0,
        connect_timeout_s: float = 10.0,
    ) -> McpServerConnection:  # fmt: skip
        """A server object in this process: one built with :func:`build_mcp_server`, or the SDK's
        ``MCPServer`` or low-level ``Server``. No port, no child: the SDK's in-memory transport
        (tests, and embedding a server's tools in the application that defines them)."""
        return cls(
            name=name, server=server, mode=mode, call_timeout_s=call_timeout_s, connect_timeout_s=connect_timeout_s
        )

    def __repr__(self) -> str:
        """The dataclass's repr, without credentials: credential-looking header values, every value of
        the child's ``env``, and a URL's password and secret query parameters are masked (a repr ends
        up in logs, tracebacks and error reports)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        if self.headers:
            shown["headers"] = redact_mapping(self.headers)
        if self.env:
            shown["env"] = dict.fromkeys(self.env, MASK)  # a child's secrets travel in its env, whatever their names
        if self.url:
            shown["url"] = redact_url(self.url)
        return f"McpServerConnection({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    def __post_init__(self) -> None:
        if sum(where is not None for where in (self.url, self.command, self.server)) != 1:
            raise ValueError("McpServerConnection needs exactly one of url, command or server")
        if not self.name:
            raise ValueError("McpServerConnection needs a name")

    def _client(self, stack: contextlib.AsyncExitStack, message_handler: Any) -> Any:
        """The SDK client (its response cache off: the provider keeps its own tool cache)."""
        import mcp

        options: dict[str, Any] = {"mode": self.mode, "cache": None, "message_handler": message_handler}
        if self.server is not None:
            return mcp.Client(self.server, **options)
        if self.command is not None:
            params = mcp.StdioServerParameters(
                command=self.command, args=list(self.args), env=dict(self.env) if self.env else None, cwd=self.cwd
            )
            return mcp.Client(mcp.stdio_client(params, errlog=self.errlog or _stderr_with_fd()), **options)
        assert self.url is not None
        if not self.headers:
            return mcp.Client(self.url, **options)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=dict(self.headers), timeout=httpx2.Timeout(30, read=300))
        stack.push_async_callback(http.aclose)
        return mcp.Client(streamable_http_client(self.url, http_client=http), **options)


def _connection_lost(exc: Any) -> bool:
    """A transport failure, not the server's answer: the connection closed, the server forgot the
    session (it restarted), or an HTTP error without a JSON-RPC body."""
    if exc.code == _CONNECTION_CLOSED:
        return True
    if exc.code == _INVALID_REQUEST:
        return str(exc.message) in _SESSION_GONE
    return bool(exc.code == _INTERNAL_ERROR and exc.message == _HTTP_ERROR_STAND_IN)


def _no_answer(what: str, setting: str, limit: float) -> TimeoutError:
    return TimeoutError(f"no answer to {what} within {setting}={limit:g} s")


def _stderr_with_fd() -> TextIO:
    """The child's stderr: ours if it has a file descriptor (in Jupyter it does not), else the real one."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return open(os.devnull, "w")  # lives as long as the process


class McpSession:
    """One open connection, owned by a task on the loop that called :meth:`open`."""

    def __init__(self, connection: McpServerConnection) -> None:
        self.connection = connection
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._lost = False
        self.on_tools_changed: Callable[[], None] | None = None
        """Called on the session's loop when the server says its tool list changed."""

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def lost(self) -> bool:
        """The connection broke (its owner exited, or a call saw the transport fail): the next
        request reconnects."""
        return self._lost or (self._owner is not None and self._owner.done())

    async def reconnect(self) -> None:
        """Close what is left of a lost connection and open a new one (once: a failure raises
        :class:`McpConnectionError` and the next request tries again)."""
        await self.close()
        await self.open()

    async def open(self) -> None:
        self._lost = False
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = self.loop.create_future()
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp-session-{self.name}")
        limit = self.connection.connect_timeout_s
        try:
            await asyncio.wait_for(asyncio.shield(ready), limit)
        except asyncio.TimeoutError:
            ready.cancel()
            self._owner.cancel()  # the SDK closes the transport (and stops a stdio child, shielded)
            with contextlib.suppress(BaseException):
                await self._owner
            raise McpConnectionError(self.name, _no_answer("the handshake", "connect_timeout_s", limit)) from None

    async def _own(self, ready: asyncio.Future[None]) -> None:
        assert self._stop is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                self.client = await stack.enter_async_context(self.connection._client(stack, self._on_message))
                if _announces_tool_changes(self.client):
                    self._watcher = asyncio.create_task(self._watch(), name=f"mcp-watch-{self.name}")
                ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:  # the SDK raises nested groups; callers get one error
            if not ready.done():
                ready.set_exception(McpConnectionError(self.name, leaf_exception(exc)))
        finally:
            self.client = None
            if not ready.done():
                ready.set_exception(McpConnectionError(self.name, ConnectionError("closed before it opened")))

    def _tools_changed(self) -> None:
        if self.on_tools_changed is not None:
            self.on_tools_changed()

    async def _on_message(self, message: Any) -> None:
        """Legacy protocol: the server's ``notifications/tools/list_changed``."""
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/tools/list_changed":
            self._tools_changed()

    async def _watch(self) -> None:
        """Modern protocol: hold a ``subscriptions/listen`` stream; re-listen (and re-list: no replay)
        with back-off when it drops."""
        for attempt in range(_MAX_RELISTENS):
            try:
                async with self._live().listen(tools_list_changed=True) as subscription:
                    async for _event in subscription:
                        self._tools_changed()
                return  # closed gracefully
            except (Exception, McpConnectionError):
                if self.client is None:
                    return
                await asyncio.sleep(min(0.1 * 2**attempt, 5.0))
                self._tools_changed()

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(BaseException):
                await self._watcher
            self._watcher = None
        if self._stop is not None and self._owner is not None:
            self._stop.set()
            with contextlib.suppress(Exception):
                await self._owner
        self._owner = None

    def _live(self) -> Any:
        if self.client is None:
            raise McpConnectionError(self.name, ConnectionError("the session is closed"))
        return self.client

    async def list_tools(self) -> list[Any]:
        """Every page of the server's tools (at most 100 pages)."""
        client = self._live()
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            listing = client.list_tools(cursor=cursor)
            page = await self._protocol("tools/list", listing, "connect_timeout_s", self.connection.connect_timeout_s)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        _log.warning(
            "MCP server %r has more than %d pages of tools; using the first %d", self.name, _MAX_PAGES, len(tools)
        )
        return tools

    async def read_resource(self, uri: str) -> Any:
        """``resources/read``: the ``ReadResourceResult`` (text or base64 blob contents)."""
        return await self._protocol(
            uri, self._live().read_resource(uri), "call_timeout_s", self.connection.call_timeout_s
        )

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        """``prompts/get``: the ``GetPromptResult`` (its messages, rendered by the server)."""
        request = self._live().get_prompt(name, arguments)
        return await self._protocol(name, request, "call_timeout_s", self.connection.call_timeout_s)

    async def _protocol(self, what: str, request: Any, setting: str, limit: float) -> Any:
        """``request``'s answer within ``limit`` seconds (the connection's ``setting``)."""
        import mcp

        try:
            return await asyncio.wait_for(request, limit)
        except asyncio.TimeoutError:
            raise McpConnectionError(self.name, _no_answer(repr(what), setting, limit)) from None
        except mcp.MCPError as exc:
            if _connection_lost(exc):
                self._lost = True
                raise McpConnectionError(self.name, exc) from exc
            raise McpProtocolError(
                f"MCP server {self.name!r} refused {what!r}: {exc.message} ({exc.code})",
                tool_name=what, server_name=self.name, code=exc.code,
            ) from exc  # fmt: skip

    async def call_tool(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> Any:
        """``tools/call`` with the connection's timeout (the SDK's own per-request clock, which also
        tells the server the call was abandoned); errors mapped to chatclient's tool errors."""
        client = self.client
        if client is None or self.lost:
            raise McpCallInterruptedError(self.name, ConnectionError("the connection is closed"), tool_name=name)
        timeout = self.connection.call_timeout_s
        try:
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout, meta=meta)
        except Exception as exc:  # mapped here, so a call that succeeds runs no import or isinstance
            mapped = self._call_error(name, exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _call_error(self, name: str, exc: Exception) -> Exception | None:
        """What a failed ``tools/call`` raises (``None``: the exception as it is)."""
        import mcp

        if isinstance(exc, mcp.MCPError):
            if _connection_lost(exc):
                self._lost = True
                return McpCallInterruptedError(self.name, exc, tool_name=name)
            if exc.code == _REQUEST_TIMEOUT:
                timeout = self.connection.call_timeout_s
                return ToolExecutionError(
                    f"MCP tool {name!r} of server {self.name!r} timed out after {timeout:g} s", tool_name=name
                )
            return McpProtocolError(
                f"MCP server {self.name!r} answered {name!r} with protocol error {exc.code}: {exc.message}",
                tool_name=name, server_name=self.name, code=exc.code,
            )  # fmt: skip
        if isinstance(exc, RuntimeError):  # the SDK's output-schema validation of a successful call
            return ToolExecutionError(f"MCP tool {name!r} of server {self.name!r}: {exc}", tool_name=name)
        return None
