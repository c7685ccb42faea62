"""A server built only with chatclient's decorators; ``python -m tests.mcp.decorated`` serves it on
stdin/stdout (the stdio interop test runs it as a child)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from chatclient import tool
from chatclient.mcp import build_mcp_server, mcp_prompt, mcp_resource, mcp_tool, serve


class Weather:
    """Tools as methods of an object, as an application would hold them."""

    def __init__(self) -> None:
        self.calls = 0

    @mcp_tool(read_only=True)
    def forecast(self, city: Annotated[str, Field(description="City name")], days: int = 1) -> str:
        """Tomorrow's weather.

        For one city.
        """
        self.calls += 1
        return f"{city}: sunny for {days} days"

    @mcp_tool
    def explode(self) -> str:
        raise ValueError("secret crash detail")

    @mcp_tool(name="refuse", description="Refuses")
    def refusing(self) -> str:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("not today")


@mcp_resource("cities://{country}", mime_type="application/json", description="Cities of a country")
def cities(country: str) -> str:
    return '["Paris", "Lyon"]' if country == "fr" else "[]"


@mcp_prompt
def ask_weather(city: str) -> str:
    """Ask for the weather."""
    return f"What is the weather in {city}?"


@tool(description="Shout a word")
def shout(word: str) -> str:
    return word.upper()


def build() -> tuple[Any, Weather]:
    weather = Weather()
    return build_mcp_server(weather, cities, ask_weather, tools=[shout], name="weather"), weather


if __name__ == "__main__":
    serve(build()[0], transport="stdio")
