"""The tool SPI: a ``ToolCallback`` runs one tool from the model's raw JSON arguments."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from typing import Protocol, runtime_checkable

from ..messages import ToolResult
from .definition import ToolContext, ToolDefinition, ToolMetadata

__all__ = ["ToolCallback", "ToolCallbackProvider"]


class ToolCallback(ABC):
    """One tool the model may call.

    Implement ``call`` (a sync tool) or set ``is_async = True`` and implement ``acall`` (an async
    tool, e.g. a remote MCP tool); the other one is derived. ``arguments`` is the model's JSON text,
    ``"{}"`` when it sent none (blank or ``null``). Both return the result as text, or a
    :class:`chatclient.ToolResult` for structured content (images, files, JSON, metadata); ``None``
    counts as a success (``"Done"``). Both raise
    :class:`chatclient.ToolArgumentsError` for bad arguments and :class:`chatclient.ToolExecutionError`
    when the tool fails; the :class:`chatclient.tools.ToolCallingManager` decides what the model is told.
    """

    is_async: bool = False
    """True when ``acall`` is the native implementation: the sync path then runs it on a loop."""

    @property
    @abstractmethod
    def definition(self) -> ToolDefinition: ...

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata()

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def identity(self) -> str:
        """What a paused call binds beyond the name: a remote tool's origin and schema (an MCP tool's
        server, original name and input-schema hash), so a resume refuses a tool that changed. Empty
        for local tools, whose code is the application's own."""
        return ""

    def validate_arguments(self, arguments: str) -> None:  # noqa: B027 (an optional hook)
        """Raise ``ToolArgumentsError`` if ``arguments`` would be rejected; the default accepts all."""

    def call(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        from .._sync import run_sync

        return run_sync(lambda: self.acall(arguments, context))

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        import asyncio

        return await asyncio.to_thread(self.call, arguments, context)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.call is ToolCallback.call and cls.acall is ToolCallback.acall:
            raise TypeError(f"{cls.__name__} must implement call() or acall()")


@runtime_checkable
class ToolCallbackProvider(Protocol):
    """A source of tools asked once per request (MCP servers, tool registries).

    ``tool_callbacks`` may be ``async def`` (a remote source such as MCP ``list_tools``): the async
    paths await it on the request's loop, the sync paths run it on the sync bridge (or call the
    provider's sync ``get_tool_callbacks()``, when it has one, with no loop in between). A sync one runs
    in a worker thread on the async paths, so it never blocks an event loop. The tools it returns
    serve the whole turn, every round and a resume alike.
    """

    def tool_callbacks(self) -> Sequence[ToolCallback] | Awaitable[Sequence[ToolCallback]]: ...
