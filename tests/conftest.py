"""Shared fixtures: small tools and scripted replies used across the suite."""

from __future__ import annotations

import pytest

from chatclient import tool


class Counters:
    """Tools with call counters, like the seed's booking tools."""

    def __init__(self) -> None:
        self.weather_calls = 0
        self.sales_calls = 0

    @tool(description="Get the weather of a city")
    def get_weather(self, city: str) -> str:
        self.weather_calls += 1
        return f"Sunny in {city}"

    @tool(description="Query sales for a period")
    def query_sales(self, period: str) -> dict[str, object]:
        self.sales_calls += 1
        return {"period": period, "amount": 1_250_000}


@pytest.fixture
def counters() -> Counters:
    return Counters()
