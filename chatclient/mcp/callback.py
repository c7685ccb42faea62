"""An MCP server's tool as an ordinary chatclient ``ToolCallback`` (async-native)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import JsonValue

from ..errors import ToolArgumentsError, ToolExecutionError
from ..messages import ToolResult
from ..tools.callback import ToolCallback
from ..tools.definition import ToolContext, ToolDefinition, ToolMetadata
from .arguments import ArgumentsCheck
from .errors import McpProtocolError, McpUnsafeWarning
from .limits import ResultLimits
from .results import to_tool_result

__all__ = ["McpMeta", "McpToolCallback", "schema_hash"]

Invoke = Callable[[str, dict[str, Any], "dict[str, Any] | None"], Awaitable[Any]]
"""Runs ``tools/call`` (original name, arguments, ``_meta``) on the loop that owns the session."""
MetaFromContext = Callable[[ToolContext], Mapping[str, Any]]

_RESERVED_META_PREFIX = "io.modelcontextprotocol/"


def schema_hash(schema: Mapping[str, Any]) -> str:
    """A short stable hash of an input schema: part of an MCP tool's identity."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class McpToolCallback(ToolCallback):
    """Calls ``original_name`` on ``server_name``; the model sees the exposed, sanitised name.

    ``identity`` (server, original name, input-schema hash) tells a changed remote tool from the one
    a person approved. The original name is also the tool's alias (``metadata.aliases``), so a gate
    by name holds whichever of the two names it is given.
    """

    def __init__(
        self,
        *,
        exposed_name: str,
        server_name: str,
        tool: Any,
        invoke: Invoke,
        call_sync: Callable[[str, dict[str, Any], dict[str, Any] | None], Any] | None = None,
        requires_confirmation: bool = False,
        meta_from_context: MetaFromContext | None = None,
        protocol_errors_to_model: bool = False,
        result_limits: ResultLimits | None = None,
        description: str | None = None,
    ) -> None:
        """``description``: what the model reads (default: the tool's description, title or name)."""
        schema: dict[str, JsonValue] = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.server_name = server_name
        self.original_name: str = tool.name
        self.tool = tool
        self.schema_hash = schema_hash(schema)
        self._definition = ToolDefinition(
            name=exposed_name,
            description=description if description is not None else tool.description or tool.title or tool.name,
            input_schema=schema,
        )
        aliases = (tool.name,) if tool.name != exposed_name else ()
        self._metadata = ToolMetadata(requires_confirmation=requires_confirmation, aliases=aliases)
        self._invoke = invoke
        self._call_sync = call_sync
        self._meta_from_context = meta_from_context
        self._protocol_errors_to_model = protocol_errors_to_model
        self._result_limits = result_limits
        self._arguments_check = ArgumentsCheck(schema)

    @property
    def is_async(self) -> bool:  # type: ignore[override]  # a plain attribute on the base class
        """Async on a running loop; from plain sync code, when the provider offers a sync call (the
        thread-backed one), :meth:`call` goes straight to the sessions' thread: no event loop of the
        caller's in between, one thread hop a call."""
        return self._call_sync is None or asyncio._get_running_loop() is not None  # no RuntimeError raised per call

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        return self._metadata

    @property
    def identity(self) -> str:
        return f"mcp:{self.server_name}:{self.original_name}:{self.schema_hash}"

    def validate_arguments(self, arguments: str) -> None:
        self._arguments(arguments)

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        try:
            result = await self._invoke(self.original_name, self._arguments(arguments), self._meta(context))
        except McpProtocolError as exc:
            raise self._protocol_error(exc) from exc
        return to_tool_result(
            result, server_name=self.server_name, tool_name=self.original_name, limits=self._result_limits
        )

    def _protocol_error(self, error: McpProtocolError) -> Exception:
        if self._protocol_errors_to_model:
            return ToolExecutionError(str(error), tool_name=self.name)
        return error

    def call(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        if self._call_sync is None:
            raise RuntimeError(
                f"MCP tool {self.name!r} comes from an AsyncMcpToolCallbackProvider, bound to its event loop: "
                "call it from async code, or use McpToolCallbackProvider for sync code"
            )
        try:
            result = self._call_sync(self.original_name, self._arguments(arguments), self._meta(context))
        except McpProtocolError as exc:
            raise self._protocol_error(exc) from exc
        return to_tool_result(
            result, server_name=self.server_name, tool_name=self.original_name, limits=self._result_limits
        )

    def _arguments(self, arguments: str) -> dict[str, Any]:
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(f"Arguments are not JSON: {exc}", tool_name=self.name) from exc
        if parsed is None:
            parsed = {}
        if not isinstance(parsed, dict):
            raise ToolArgumentsError("Arguments must be a JSON object", tool_name=self.name)
        self._arguments_check.check(parsed, self.name)
        return parsed

    def _meta(self, context: ToolContext | None) -> dict[str, Any] | None:
        if self._meta_from_context is None or context is None:
            return None
        meta: dict[str, Any] = {}
        dropped: list[str] = []
        for key, value in self._meta_from_context(context).items():
            if value is None or key.startswith(_RESERVED_META_PREFIX):
                continue
            if _is_json(value):
                meta[key] = value
            else:
                dropped.append(key)
        if dropped:
            warnings.warn(
                f"Tool context key(s) {dropped} not sent to MCP server {self.server_name!r} as _meta: "
                "their values are not JSON (str, number, bool, None, lists and str-keyed dicts of these)",
                McpUnsafeWarning,
                stacklevel=2,
            )
        return meta or None


def _is_json(value: Any, depth: int = 0) -> bool:
    """What ``_meta`` can carry: JSON scalars, and lists and str-keyed dicts of them (not too deep)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > 32:
        return False
    if isinstance(value, (list, tuple)):
        return all(_is_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item, depth + 1) for key, item in value.items())
    return False


class McpMeta:
    """Which tool-context entries travel to MCP servers as ``_meta`` (by default none: the context
    often holds user ids and tokens, and MCP servers are often someone else's)."""

    @staticmethod
    def keys(*names: str) -> MetaFromContext:
        """Only these context keys."""
        return lambda context: {name: context[name] for name in names if name in context}

    @staticmethod
    def forward_all() -> MetaFromContext:
        """Every context entry (Spring AI's default)."""
        return lambda context: dict(context)
