"""A deadline bounds the headers too: a server that sends its status line and then a header line
every 0.2 s (each read quick, the whole endless) is cut at the deadline, in all four modes over
httpx2, and in the async modes over an async SDK client (the exchange's task is cancelled).

The server's view proves it, as in :mod:`tests.providers.test_deadline_trickle`: one request, the
client hung up before the headers ended, the deadline's error.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest

from chatclient.testing import MODES
from chatclient.testing.fault_server import FaultServer

from .test_deadline_trickle import check_cut_at_the_deadline, over_httpx2, over_sdk, reply_for, trickling

__all__ = ["trickling"]  # the fixture, shared


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_trickling_headers_are_cut_at_the_deadline_over_httpx2(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    server = trickling(reply_for(provider, mode))
    check_cut_at_the_deadline(server, over_httpx2(provider), mode, scenario="trickle-head")


@pytest.mark.parametrize("mode", ["acall", "astream"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_trickling_headers_are_cut_at_the_deadline_over_an_async_sdk_client(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    server = trickling(reply_for(provider, mode))
    check_cut_at_the_deadline(server, over_sdk(provider, use_async=True), mode, scenario="trickle-head")
