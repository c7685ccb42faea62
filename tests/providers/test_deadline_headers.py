"""A deadline bounds the headers too: a server that sends its status line and then a header line
every 0.2 s (each read quick, the whole endless) is cut at the deadline, in all four modes over
httpx2 and over an official SDK client of either kind (a sync client's pending request is found
through its own event hooks; an async client's exchange is cancelled).

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


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses"])
def test_trickling_headers_are_cut_at_the_deadline_over_an_sdk_client(
    trickling: Callable[[httpx2.Response], FaultServer], provider: str, mode: str
) -> None:
    """The SDK client of the mode's kind: a sync one's pending request is found through the SDK
    client's own event hooks and its connection shut down; an async one's exchange is cancelled."""
    server = trickling(reply_for(provider, mode))
    make = over_sdk(provider, use_async=mode.startswith("a"))
    check_cut_at_the_deadline(server, make, mode, scenario="trickle-head")


@pytest.mark.parametrize("mode", MODES)
def test_trickling_headers_are_cut_across_the_sdk_bridges(
    trickling: Callable[[httpx2.Response], FaultServer], mode: str
) -> None:
    """The other kind of client: a sync one serving the async modes, an async one the sync modes."""
    server = trickling(reply_for("openai", mode))
    make = over_sdk("openai", use_async=not mode.startswith("a"))
    check_cut_at_the_deadline(server, make, mode, scenario="trickle-head")
