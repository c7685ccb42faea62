"""An MCP server on stdin/stdout, run by the stdio test as ``python -m tests.mcp.stdio_server``."""

from __future__ import annotations

import os

from tests.mcp.servers import demo_server


def main() -> None:
    server = demo_server("child")

    @server.tool(description="The server's process id")
    def pid() -> int:
        return os.getpid()

    server.run("stdio")


if __name__ == "__main__":
    main()
