"""Real MCP servers for the tests, built with the official SDK; each counts the calls it receives."""

from __future__ import annotations

import base64
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from pydantic import Field

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-an-image").decode()


def demo_server(name: str = "demo", calls: Counter[str] | None = None) -> MCPServer:
    """Tools: add, explode (raises), refuse (ToolError), slow (3 s), picture (an image), search,
    a long dotted name; ``calls`` counts invocations by original name."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    counts = calls if calls is not None else Counter()
    server = MCPServer(name, log_level="WARNING")

    @server.tool(description="Add two numbers")
    def add(a: Annotated[int, Field(description="first")], b: int) -> int:
        counts["add"] += 1
        return a + b

    @server.tool(description="Always fails")
    def explode() -> str:
        counts["explode"] += 1
        raise ValueError("secret crash detail")

    @server.tool(description="Refuses with a message")
    def refuse(reason: str) -> str:
        counts["refuse"] += 1
        raise ToolError(f"refused: {reason}")

    @server.tool(description="Takes three seconds")
    async def slow() -> str:
        counts["slow"] += 1
        await anyio.sleep(3)
        return "slow done"

    @server.tool(description="A picture", structured_output=False)
    def picture() -> Any:
        from mcp.types import ImageContent

        counts["picture"] += 1
        return [ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool(description=f"Search {name}")
    def search(query: str) -> str:
        counts["search"] += 1
        return f"{name} found {query}"

    arrived = {"n": 0}
    everyone = anyio.Event()

    @server.tool(description="Waits until four calls are in flight at once")
    async def meet(who: int) -> str:
        counts["meet"] += 1
        arrived["n"] += 1
        if arrived["n"] == 4:
            everyone.set()
        with anyio.move_on_after(5):
            await everyone.wait()
            return "met"
        return "alone"

    @server.tool(description="Answers with a protocol error")
    def broken() -> str:
        import mcp

        counts["broken"] += 1
        raise mcp.MCPError(-32602, "broken on purpose")

    long_name = "very.long." + "x" * 90
    server.add_tool(lambda: "long ok", name=long_name, description="A long dotted name")
    return server
