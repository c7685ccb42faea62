"""Serving tools, resources and prompts over MCP with the official SDK's ``MCPServer``.

``@mcp_tool``, ``@mcp_resource`` and ``@mcp_prompt`` only mark functions and methods (no global
registry); :func:`build_mcp_server` collects the marked callables of the functions and objects it is
given, and existing ``@tool`` functions, into one server; :func:`serve` runs it on 127.0.0.1.

    @mcp_tool
    def forecast(city: Annotated[str, Field(description="City name")]) -> str:
        \"\"\"Tomorrow's weather.\"\"\"

    serve(build_mcp_server(forecast, name="weather"), port=8000)  # http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from ..tools.decorator import spec_of
from ..tools.definition import ToolContext
from .errors import McpUnsafeWarning

__all__ = ["build_mcp_server", "mcp_prompt", "mcp_resource", "mcp_tool", "serve"]

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__chatclient_mcp__"


@dataclass(frozen=True)
class _Mark:
    kind: Literal["tool", "resource", "prompt"]
    options: dict[str, Any] = field(default_factory=dict)


def _marking(kind: Literal["tool", "resource", "prompt"], fn: F | None, options: dict[str, Any]) -> Any:
    def mark(target: F) -> F:
        setattr(target, _MARK, _Mark(kind, options))
        return target

    return mark(fn) if fn is not None else mark


@overload
def mcp_tool(fn: F, /) -> F: ...
@overload
def mcp_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    structured_output: bool | None = None,
) -> Callable[[F], F]: ...
def mcp_tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    structured_output: bool | None = None,
) -> Any:
    """Mark a function or method as an MCP tool (bare or called). The description defaults to the
    dedented docstring; parameter descriptions come from ``Annotated[T, Field(description=...)]``;
    the hints (``read_only``, ...) are advisory for clients."""
    hints = {"read_only_hint": read_only, "destructive_hint": destructive, "idempotent_hint": idempotent}
    hints["open_world_hint"] = open_world
    options = {"name": name, "description": description, "title": title, "structured_output": structured_output}
    return _marking("tool", fn, {**options, "hints": {k: v for k, v in hints.items() if v is not None}})


def mcp_resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str = "text/plain",
) -> Callable[[F], F]:
    """Mark a function as the MCP resource at ``uri`` (``{var}`` parts make a template whose variables
    are the function's parameters). Return ``str`` for text, ``bytes`` for a blob."""
    options = {"name": name, "title": title, "description": description, "mime_type": mime_type}
    return _marking("resource", None, {"uri": uri, **options})  # type: ignore[no-any-return]


@overload
def mcp_prompt(fn: F, /) -> F: ...
@overload
def mcp_prompt(
    *, name: str | None = None, title: str | None = None, description: str | None = None
) -> Callable[[F], F]: ...
def mcp_prompt(
    fn: F | None = None, /, *, name: str | None = None, title: str | None = None, description: str | None = None
) -> Any:
    """Mark a function as an MCP prompt; its parameters are the prompt's (string) arguments."""
    return _marking("prompt", fn, {"name": name, "title": title, "description": description})


def build_mcp_server(
    *sources: object,
    name: str = "chatclient",
    version: str = "",
    instructions: str | None = None,
    tools: Iterable[Callable[..., Any]] = (),
) -> Any:
    """An ``MCPServer`` with every marked function of ``sources`` (functions, or objects whose methods
    are marked) and the ``@tool`` functions of ``tools``. The root logger is left as it was (the SDK
    configures it when the application had not)."""
    from mcp.server.mcpserver import MCPServer

    root = logging.getLogger()
    handlers = list(root.handlers)
    server = MCPServer(name, version=version, instructions=instructions, log_level="WARNING")
    root.handlers[:] = handlers
    for fn, mark in _marked(sources):
        _register(server, fn, mark)
    for fn in tools:
        spec = spec_of(fn)
        if spec is None:
            raise TypeError(f"{fn!r} is not a @tool function: mark it with @tool or pass it as a source")
        server.add_tool(_with_tool_context(fn), name=spec.name, description=spec.description)
    return server


def _marked(sources: Iterable[object]) -> Iterable[tuple[Callable[..., Any], _Mark]]:
    for source in sources:
        mark = getattr(source, _MARK, None)
        if isinstance(mark, _Mark):
            yield source, mark  # type: ignore[misc]  # a marked object is a callable
            continue
        found = False
        for attribute in dir(type(source)):
            member = getattr(type(source), attribute, None)
            member_mark = getattr(member, _MARK, None)
            if isinstance(member_mark, _Mark):
                found = True
                yield getattr(source, attribute), member_mark
        if not found:
            raise TypeError(f"{source!r} has no @mcp_tool, @mcp_resource or @mcp_prompt")


def _register(server: Any, fn: Callable[..., Any], mark: _Mark) -> None:
    options = dict(mark.options)
    description = options.pop("description", None) or inspect.cleandoc(fn.__doc__ or "") or None
    if mark.kind == "tool":
        from mcp.types import ToolAnnotations

        hints = options.pop("hints")
        name = options.pop("name") or fn.__name__
        annotations = ToolAnnotations(**hints) if hints else None
        server.add_tool(_with_tool_context(fn), name=name, description=description, annotations=annotations, **options)
    elif mark.kind == "resource":
        uri = options.pop("uri")
        server.resource(uri, description=description, **{**options, "name": options["name"] or fn.__name__})(fn)
    else:
        server.prompt(description=description, **{**options, "name": options["name"] or fn.__name__})(fn)


_RESERVED_META_PREFIX = "io.modelcontextprotocol/"
_CONTEXT_PARAMETER = "mcp_request_context"


def _with_tool_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its ``ToolContext`` parameter filled from the request's ``_meta`` (reserved keys
    dropped) and hidden from the schema: the server-side mirror of the client's ``meta_from_context``."""
    signature = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True)
    names = [name for name in signature.parameters if hints.get(name) is ToolContext]
    if not names:
        return fn
    (context_name,) = names
    from mcp.server.mcpserver import Context

    parameters = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.name != context_name
    ]
    parameters.append(inspect.Parameter(_CONTEXT_PARAMETER, inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    def fill(kwargs: dict[str, Any]) -> dict[str, Any]:
        meta: Any = kwargs.pop(_CONTEXT_PARAMETER).request_context.meta or {}
        items = meta if isinstance(meta, dict) else meta.model_dump(by_alias=True)
        kwargs[context_name] = ToolContext({k: v for k, v in items.items() if not k.startswith(_RESERVED_META_PREFIX)})
        return kwargs

    wrapper: Any
    if inspect.iscoroutinefunction(fn):

        async def wrapper(**kwargs: Any) -> Any:
            return await fn(**fill(kwargs))
    else:

        def wrapper(**kwargs: Any) -> Any:
            return fn(**fill(kwargs))

    wrapper.__signature__ = signature.replace(parameters=parameters)
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    if "return" in hints:
        wrapper.__annotations__["return"] = hints["return"]
    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    return wrapper  # type: ignore[no-any-return]


def serve(
    server: Any,
    *,
    transport: Literal["streamable-http", "stdio"] = "streamable-http",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    stateless: bool = False,
    json_response: bool = False,
) -> None:
    """Run ``server`` until interrupted: Streamable HTTP on loopback by default (unauthenticated: bind
    elsewhere only behind your own auth), or stdio. Blocking, so not inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("serve() blocks: inside a running event loop await server.run_streamable_http_async()")
    if transport == "stdio":
        server.run("stdio")
        return
    if (
        host not in ("127.0.0.1", "localhost", "::1")
        and getattr(getattr(server, "settings", None), "auth", None) is None
    ):
        warnings.warn(
            f"Serving MCP on {host} without auth: anyone who reaches it can call its tools "
            "(configure auth=, or serve on 127.0.0.1 behind your own)",
            McpUnsafeWarning,
            stacklevel=2,
        )
    server.run(
        "streamable-http",
        host=host,
        port=port,
        streamable_http_path=path,
        stateless_http=stateless,
        json_response=json_response,
    )
