"""MCP servers' tools as a ``ToolCallbackProvider``, in two drivers over one catalog.

- :class:`AsyncMcpToolCallbackProvider` is bound to the event loop that first uses it (an async
  service): no thread hop, its tools run only on that loop.
- :class:`McpToolCallbackProvider` keeps its sessions on a private event-loop thread, so it works
  from sync code, from any event loop, and inside a running loop (Jupyter), at one thread hop a call.

Both connect and list lazily, on the first request (nothing happens at construction), cache the
tool set until :meth:`invalidate_cache`, and are asked once per request by the tool loop, so a
turn keeps the tools it started with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import warnings
import weakref
from collections.abc import Callable, Collection, Coroutine, Sequence
from typing import Any, TypeVar

from ..tools._json_schema import input_schema_problem
from ..tools.confirmation import UnmatchedToolNameWarning
from .callback import McpToolCallback, MetaFromContext
from .connection import McpServerConnection, McpSession
from .errors import McpConnectionError, McpUnsafeWarning
from .limits import (
    DEFAULT_MAX_DESCRIPTION_CHARS,
    DEFAULT_MAX_MEDIA_BYTES,
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_SCHEMA_CHARS,
    DEFAULT_MAX_TOOLS_PER_SERVER,
    ListingLimits,
    ResultLimits,
)
from .naming import McpToolNaming, check_no_collisions

__all__ = ["AsyncMcpToolCallbackProvider", "McpToolCallbackProvider", "McpToolFilter", "RequireConfirmation"]

T = TypeVar("T")
McpToolFilter = Callable[[str, Any], bool]
"""``(server name, mcp.types.Tool) -> keep?``"""
RequireConfirmation = bool | Collection[str] | Callable[[str, Any], bool] | None
"""``True`` (every tool), tool names (each the exposed name or the server's own; a name that
matches no listed tool is reported with an ``UnmatchedToolNameWarning`` at listing time), or a
predicate over ``(server name, Tool)``."""
_SYNC_SLACK_S = 5.0
"""How much longer than the call timeout a sync caller waits before it gives up on the runtime."""


class _Catalog:
    """Sessions and the tool set they expose; every coroutine runs on the sessions' loop."""

    def __init__(
        self,
        connections: Sequence[McpServerConnection],
        naming: McpToolNaming | None,
        tool_filter: McpToolFilter | None,
        require_confirmation: RequireConfirmation,
        meta_from_context: MetaFromContext | None,
    ) -> None:
        names = [c.name for c in connections]
        if len(set(names)) != len(names):
            raise ValueError(f"MCP connection names must be unique: {names}")
        self.connections = tuple(connections)
        self.naming = naming or McpToolNaming.as_is()
        self.tool_filter = tool_filter
        self.require_confirmation = _gate_rule(require_confirmation)
        self.meta_from_context = meta_from_context
        self.protocol_errors_to_model = False
        self.result_limits = ResultLimits()
        self.listing_limits = ListingLimits()
        self.sessions: list[McpSession] = []
        self.callbacks: tuple[McpToolCallback, ...] | None = None
        self._lock: asyncio.Lock | None = None

    def cached(self) -> tuple[McpToolCallback, ...] | None:
        """The tool set, when it is listed and every connection is up (safe from any thread)."""
        callbacks = self.callbacks
        if callbacks is None:
            return None
        for session in self.sessions:  # a loop, not any(): no generator per request
            if session.lost:
                return None
        return callbacks

    async def tool_callbacks(
        self, bind: Callable[[McpSession], dict[str, Any]], *, fresh: bool = False
    ) -> tuple[McpToolCallback, ...]:
        """The tool set: cached, or listed on first use, after an invalidation, or when ``fresh``
        (a resume: a server may change a tool without telling anyone)."""
        cached = None if fresh else self.cached()
        if cached is not None:
            return cached
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            await self._reconnect_lost()
            if self.callbacks is None or fresh:
                await self._open()
                try:
                    self.callbacks = await self._list(bind)
                except McpConnectionError:
                    if not any(s.lost for s in self.sessions):
                        raise
                    await self._reconnect_lost()  # found lost while listing: once more, then it is an error
                    self.callbacks = await self._list(bind)
            return self.callbacks

    async def _reconnect_lost(self) -> None:
        """Reopen each lost connection once, then list again (a restarted server may serve other tools)."""
        lost = [s for s in self.sessions if s.lost]
        if not lost:
            return
        self.callbacks = None
        outcomes = await asyncio.gather(*(s.reconnect() for s in lost), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _open(self) -> None:
        if self.sessions:
            return
        sessions = [McpSession(c) for c in self.connections]
        for session in sessions:
            session.on_tools_changed = self.invalidate
        outcomes = await asyncio.gather(*(s.open() for s in sessions), return_exceptions=True)
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            await asyncio.gather(*(s.close() for s, o in zip(sessions, outcomes, strict=True) if o is None))
            raise failures[0]
        self.sessions = sessions

    async def _list(self, bind: Callable[[McpSession], dict[str, Any]]) -> tuple[McpToolCallback, ...]:
        listed = await asyncio.gather(*(s.list_tools() for s in self.sessions))
        callbacks: list[McpToolCallback] = []
        names: set[str] = set()
        limits = self.listing_limits
        for session, tools in zip(self.sessions, listed, strict=True):
            offered: list[tuple[str, Any]] = []
            for tool in tools:
                exposed = self.naming(session.name, tool.name)
                names.update((exposed, tool.name))
                if self.tool_filter is not None and not self.tool_filter(session.name, tool):
                    continue
                if not limits.schema_fits(session.name, tool) or not _usable_schema(session.name, tool):
                    continue
                offered.append((exposed, tool))
            offered = list(limits.first_tools(session.name, offered))
            descriptions = limits.descriptions(session.name, [tool for _, tool in offered])
            for (exposed, tool), description in zip(offered, descriptions, strict=True):
                callbacks.append(
                    McpToolCallback(
                        exposed_name=exposed,
                        server_name=session.name,
                        tool=tool,
                        description=description,
                        requires_confirmation=self._gated(session.name, tool, exposed),
                        meta_from_context=self.meta_from_context,
                        protocol_errors_to_model=self.protocol_errors_to_model,
                        result_limits=self.result_limits,
                        **bind(session),
                    )
                )
        check_no_collisions(((c.name, c.server_name, c.original_name) for c in callbacks), self.naming)
        self._check_gated_names(names)
        return tuple(callbacks)

    def _gated(self, server_name: str, tool: Any, exposed: str) -> bool:
        rule = self.require_confirmation
        if rule is None or isinstance(rule, bool):
            return bool(rule)
        if callable(rule):
            return bool(rule(server_name, tool))
        return tool.name in rule or exposed in rule

    def _check_gated_names(self, listed: set[str]) -> None:
        """Warn about names in ``require_confirmation`` that no listed tool has (a tool filtered
        out counts as listed: it cannot be called, so its gate is moot, not wrong)."""
        rule = self.require_confirmation
        if not isinstance(rule, frozenset):
            return
        unmatched = sorted(rule - listed)
        if unmatched:
            warnings.warn(
                f"require_confirmation names {unmatched}, which no tool of MCP server(s) "
                f"{[c.name for c in self.connections]} has (as its name on the server or its exposed name, "
                f"naming {self.naming!r}): those gates hold nothing",
                UnmatchedToolNameWarning,
                stacklevel=2,
            )

    async def session(self, name: str) -> McpSession:
        """The open session of the server called ``name`` (connecting every server on first use)."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            await self._reconnect_lost()
            await self._open()
        for session in self.sessions:
            if session.name == name:
                return session
        raise ValueError(f"No MCP server named {name!r}: {[c.name for c in self.connections]}")

    async def read_resource(self, server: str, uri: str) -> Any:
        return await (await self.session(server)).read_resource(uri)

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None) -> Any:
        return await (await self.session(server)).get_prompt(name, arguments)

    def invalidate(self) -> None:
        """List again on the next request; a request under way keeps the tools it resolved."""
        self.callbacks = None

    async def close(self) -> None:
        sessions, self.sessions, self.callbacks = self.sessions, [], None
        await asyncio.gather(*(s.close() for s in sessions))


def _gate_rule(rule: RequireConfirmation) -> bool | frozenset[str] | Callable[[str, Any], bool] | None:
    """``rule`` with its names as a set (a single ``str`` is one name, not a set of characters)."""
    if rule is None or isinstance(rule, bool) or callable(rule):
        return rule
    return frozenset({rule}) if isinstance(rule, str) else frozenset(rule)


def _usable_schema(server_name: str, tool: Any) -> bool:
    """Whether a listed tool's input schema is one a provider accepts; a bad one is dropped with a
    warning (offered, it would make the provider refuse every request with an error naming no tool)."""
    problem = input_schema_problem(tool.input_schema if tool.input_schema is not None else {})
    if problem is None:
        return True
    warnings.warn(
        f"MCP tool {tool.name!r} of server {server_name!r} is left out: its input schema is invalid ({problem})",
        McpUnsafeWarning,
        stacklevel=2,
    )
    return False


class AsyncMcpToolCallbackProvider:
    """MCP tools for async code, on the loop that first asks for them; ``async with`` closes them.

    ``naming`` makes the exposed names (default: the tool's own, sanitised; a collision between
    servers is an error); ``tool_filter`` keeps tools; ``require_confirmation`` gates them (see
    :data:`RequireConfirmation`); ``meta_from_context`` picks the tool-context entries sent as
    ``_meta`` (default: none; see ``McpMeta``); ``protocol_errors_to_model`` tells the model about a
    server's protocol error instead of raising :class:`McpProtocolError`. ``max_result_chars``
    (100,000) bounds the text of one result the model reads, cut with a marker saying how much
    was left out, and ``max_result_media_bytes`` (5 MB) its images and files, replaced by a note
    past it; the full sizes go into the result's metadata (``result_cut``); ``None``: no bound.
    Tools whose input schema is invalid are left out with an :class:`McpUnsafeWarning`.

    The listing is bounded too, each cut with an :class:`McpUnsafeWarning`: ``max_tools_per_server``
    (128) tools of each server are offered, the first it lists; ``max_description_chars`` (4,000)
    of a description, cut with a marker; a tool whose input schema is over ``max_schema_chars``
    (32,000, as compact JSON) is left out. ``None``: no bound.
    """

    def __init__(
        self,
        *connections: McpServerConnection,
        naming: McpToolNaming | None = None,
        tool_filter: McpToolFilter | None = None,
        require_confirmation: RequireConfirmation = None,
        meta_from_context: MetaFromContext | None = None,
        protocol_errors_to_model: bool = False,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        max_result_media_bytes: int | None = DEFAULT_MAX_MEDIA_BYTES,
        max_tools_per_server: int | None = DEFAULT_MAX_TOOLS_PER_SERVER,
        max_description_chars: int | None = DEFAULT_MAX_DESCRIPTION_CHARS,
        max_schema_chars: int | None = DEFAULT_MAX_SCHEMA_CHARS,
    ) -> None:
        self._catalog = _Catalog(connections, naming, tool_filter, require_confirmation, meta_from_context)
        self._catalog.protocol_errors_to_model = protocol_errors_to_model
        self._catalog.result_limits = ResultLimits(max_result_chars, max_result_media_bytes)
        self._catalog.listing_limits = ListingLimits(max_tools_per_server, max_description_chars, max_schema_chars)

    async def tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        cached = self._catalog.cached()  # the usual request: the listed set, no coroutine of the catalog's
        return cached if cached is not None else await self._catalog.tool_callbacks(_loop_bound)

    async def fresh_tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        """The tools listed again past the cache (what a resume checks the paused calls against)."""
        return await self._catalog.tool_callbacks(_loop_bound, fresh=True)

    def invalidate_cache(self) -> None:
        """List the tools again on the next request (the sessions stay open)."""
        self._catalog.callbacks = None

    async def read_resource(self, server: str, uri: str) -> Any:
        """Read a resource of ``server`` (``mcp.types.ReadResourceResult``)."""
        return await self._catalog.read_resource(server, uri)

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> Any:
        """Render a prompt of ``server`` (``mcp.types.GetPromptResult``)."""
        return await self._catalog.get_prompt(server, name, arguments)

    async def aclose(self) -> None:
        await self._catalog.close()

    async def __aenter__(self) -> AsyncMcpToolCallbackProvider:
        await self.tool_callbacks()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _loop_bound(session: McpSession) -> dict[str, Any]:
    async def invoke(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> Any:
        if asyncio.get_running_loop() is not session.loop:
            raise RuntimeError(
                f"MCP server {session.name!r} was opened on another event loop: an AsyncMcpToolCallbackProvider "
                "serves one loop; use McpToolCallbackProvider to call from several loops or from sync code"
            )
        return await session.call_tool(name, arguments, meta)

    return {"invoke": invoke}


def _abandon(started: list[asyncio.Task[Any]], coro: Coroutine[Any, Any, Any]) -> None:
    """Cancel a runtime task nobody waits for any more; an error it still ends with is not logged
    as never retrieved (its caller has already been told it gave up), and a call cancelled before
    it began is closed (not reported as never awaited)."""
    task = started[0]
    task.cancel()

    def finished(task: asyncio.Task[Any]) -> None:
        task.cancelled() or task.exception()
        coro.close()

    task.add_done_callback(finished)


async def _relay(coro: Coroutine[Any, Any, Any], settle: Callable[[Any, BaseException | None], None]) -> None:
    """Run ``coro`` and hand its outcome to ``settle`` from inside the task, as soon as it ends. A
    cancellation is handed on too, then ends the task as cancelled; an error ends it quietly (its
    caller has it)."""
    try:
        result = await coro
    except BaseException as exc:
        settle(None, exc)
        if not isinstance(exc, Exception):
            raise
        return
    settle(result, None)


def _settle_waiter(waiter: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if waiter.done():  # a cancelled caller's future stays cancelled
        return
    if isinstance(error, asyncio.CancelledError):
        waiter.cancel()
    elif error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(result)


class _Runtime:
    """A daemon thread running the event loop that owns the sessions."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="chatclient-mcp", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the runtime and block until it ends: one wake-up each way, with a bare
        lock as the signal (no ``concurrent.futures.Future``, condition or chained callbacks), released
        from inside the runtime's task (no done callback: one loop iteration less a call)."""
        done = threading.Lock()
        done.acquire()
        outcome: list[tuple[Any, BaseException | None]] = []
        started: list[asyncio.Task[None]] = []

        def settle(result: Any, error: BaseException | None) -> None:
            outcome.append((result, error))
            done.release()

        def start() -> None:
            started.append(asyncio.Task(_relay(coro, settle), loop=self.loop))  # not via create_task: a frame less

        self.loop.call_soon_threadsafe(start)
        try:
            if not done.acquire(timeout=timeout):
                raise TimeoutError(f"the MCP runtime did not answer within {timeout:g} s")
        except BaseException:
            # a timeout or an interrupt must not leave the remote call running; ``start`` ran first
            # (the loop runs its callbacks in order), so the task exists by then
            with contextlib.suppress(RuntimeError):  # the runtime was shut down meanwhile
                self.loop.call_soon_threadsafe(_abandon, started, coro)
            raise
        result, error = outcome[0]
        if error is not None:
            raise error
        return result  # type: ignore[no-any-return]

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on the runtime from another event loop: one wake-up each way (the
        runtime's task settles the caller's future directly); cancelling the caller cancels it."""
        caller = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = caller.create_future()
        started: list[asyncio.Task[None]] = []

        def settle(result: Any, error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody waits
                caller.call_soon_threadsafe(_settle_waiter, waiter, result, error)

        def start() -> None:
            started.append(asyncio.Task(_relay(coro, settle), loop=self.loop))  # not via create_task: a frame less

        self.loop.call_soon_threadsafe(start)
        try:
            return await waiter
        except asyncio.CancelledError:
            with contextlib.suppress(RuntimeError):  # the runtime was shut down meanwhile
                self.loop.call_soon_threadsafe(_abandon, started, coro)
            raise

    def shutdown(self, catalog: _Catalog, timeout: float = 10.0) -> None:
        if not self.thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.submit(catalog.close()).result(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        if not self.thread.is_alive():
            self.loop.close()


class McpToolCallbackProvider:
    """MCP tools for sync and async code alike: sessions live on a private event-loop thread.

    Options as :class:`AsyncMcpToolCallbackProvider`. Use it as a context manager or call
    :meth:`close` (HTTP sessions are ended, stdio children stopped); it is also closed when collected.
    """

    def __init__(
        self,
        *connections: McpServerConnection,
        naming: McpToolNaming | None = None,
        tool_filter: McpToolFilter | None = None,
        require_confirmation: RequireConfirmation = None,
        meta_from_context: MetaFromContext | None = None,
        protocol_errors_to_model: bool = False,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        max_result_media_bytes: int | None = DEFAULT_MAX_MEDIA_BYTES,
        max_tools_per_server: int | None = DEFAULT_MAX_TOOLS_PER_SERVER,
        max_description_chars: int | None = DEFAULT_MAX_DESCRIPTION_CHARS,
        max_schema_chars: int | None = DEFAULT_MAX_SCHEMA_CHARS,
    ) -> None:
        self._catalog = _Catalog(connections, naming, tool_filter, require_confirmation, meta_from_context)
        self._catalog.protocol_errors_to_model = protocol_errors_to_model
        self._catalog.result_limits = ResultLimits(max_result_chars, max_result_media_bytes)
        self._catalog.listing_limits = ListingLimits(max_tools_per_server, max_description_chars, max_schema_chars)
        self._runtime: _Runtime | None = None
        self._start_lock = threading.Lock()

    def _started(self) -> _Runtime:
        with self._start_lock:
            if self._runtime is None:
                self._runtime = _Runtime()
                weakref.finalize(self, self._runtime.shutdown, self._catalog)
            return self._runtime

    async def tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        """The tools; once listed, straight from the cache with no hop to the sessions' thread (the
        sync path runs this on its own thread's loop at the cost of one coroutine step)."""
        cached = self._catalog.cached()
        if cached is not None and self._runtime is not None:
            return cached
        runtime = self._started()
        return await asyncio.wrap_future(runtime.submit(self._catalog.tool_callbacks(self._bind)))

    def get_tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        """The tools, from sync code (connects on first use)."""
        cached = self._catalog.cached()
        if cached is not None and self._runtime is not None:
            return cached
        return self._started().submit(self._catalog.tool_callbacks(self._bind)).result()

    async def fresh_tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        """The tools listed again past the cache (what a resume checks the paused calls against)."""
        runtime = self._started()
        return await asyncio.wrap_future(runtime.submit(self._catalog.tool_callbacks(self._bind, fresh=True)))

    def get_fresh_tool_callbacks(self) -> tuple[McpToolCallback, ...]:
        """:meth:`fresh_tool_callbacks` from sync code."""
        return self._started().submit(self._catalog.tool_callbacks(self._bind, fresh=True)).result()

    def invalidate_cache(self) -> None:
        self._catalog.callbacks = None

    def _bind(self, session: McpSession) -> dict[str, Any]:
        runtime = self._started()
        wait_s = session.connection.call_timeout_s + _SYNC_SLACK_S

        async def invoke(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> Any:
            return await runtime.arun(session.call_tool(name, arguments, meta))

        def call_sync(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> Any:
            return runtime.run(session.call_tool(name, arguments, meta), wait_s)

        return {"invoke": invoke, "call_sync": call_sync}

    def read_resource(self, server: str, uri: str) -> Any:
        """Read a resource of ``server`` (``mcp.types.ReadResourceResult``), from sync code."""
        return self._started().submit(self._catalog.read_resource(server, uri)).result()

    def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> Any:
        """Render a prompt of ``server`` (``mcp.types.GetPromptResult``), from sync code."""
        return self._started().submit(self._catalog.get_prompt(server, name, arguments)).result()

    async def aread_resource(self, server: str, uri: str) -> Any:
        return await asyncio.wrap_future(self._started().submit(self._catalog.read_resource(server, uri)))

    async def aget_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> Any:
        return await asyncio.wrap_future(self._started().submit(self._catalog.get_prompt(server, name, arguments)))

    def close(self) -> None:
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.shutdown(self._catalog)

    def __enter__(self) -> McpToolCallbackProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
