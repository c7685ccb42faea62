"""The tool functions every library wraps with its own decorator, and a counter of tool runs that the
harness uses to check that a library really ran the tools it was asked to."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from .canned import (
    BOOKING_DESCRIPTION,
    LOOKUP_DESCRIPTION,
    N_TOOLS,
    TOOL_DELAY_S,
    WEATHER_DESCRIPTION,
    booking_text,
    catalog_name,
    forecast_description,
    forecast_text,
    lookup_text,
    loop_name,
    weather_text,
)

RUNS = [0]
"""Tool executions so far (all tools, all libraries)."""


def get_weather(city: str) -> str:
    RUNS[0] += 1
    return weather_text(city)


async def lookup_async(key: str) -> str:
    await asyncio.sleep(TOOL_DELAY_S)
    RUNS[0] += 1
    return lookup_text(key)


def lookup_blocking(key: str) -> str:
    time.sleep(TOOL_DELAY_S)
    RUNS[0] += 1
    return lookup_text(key)


def book_flight(flight: str) -> str:
    RUNS[0] += 1
    return booking_text(flight)


def _forecast(index: int, name: str | None = None) -> Callable[[str, int], str]:
    def forecast(city: str, days: int) -> str:
        RUNS[0] += 1
        return forecast_text(index, city, days)

    forecast.__name__ = forecast.__qualname__ = name or f"tool_{index:02d}"
    forecast.__doc__ = forecast_description(index)
    return forecast


def forecast_tools() -> list[tuple[str, str, Callable[[str, int], str]]]:
    """(name, description, function) of the 50 tools of S7."""
    return [(f"tool_{i:02d}", forecast_description(i), _forecast(i)) for i in range(N_TOOLS)]


def catalog_tools(n: int) -> list[tuple[str, str, Callable[[str, int], str]]]:
    """The first ``n`` tools of S8a's catalog: S7's forecast tools under other names (never called)."""
    return [(catalog_name(i), forecast_description(i), _forecast(i, catalog_name(i))) for i in range(n)]


def loop_tools(n: int) -> list[tuple[str, str, Callable[[str, int], str]]]:
    """The ``n`` tools of S8b's loop (``loop_00`` is the one called)."""
    return [(loop_name(i), forecast_description(i), _forecast(i, loop_name(i))) for i in range(n)]


get_weather.__doc__ = WEATHER_DESCRIPTION
book_flight.__doc__ = BOOKING_DESCRIPTION
lookup_async.__doc__ = lookup_blocking.__doc__ = LOOKUP_DESCRIPTION
# Both variants are the tool "lookup" to every library (names are taken from ``__name__``).
lookup_async.__name__ = lookup_async.__qualname__ = "lookup"
lookup_blocking.__name__ = lookup_blocking.__qualname__ = "lookup"

LookupFn = Callable[[str], str] | Callable[[str], Awaitable[str]]
