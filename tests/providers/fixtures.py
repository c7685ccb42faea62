"""Replaying the recorded provider traffic kept in ``tests/fixtures/provider-traffic``.

The recordings live inside the repository (a copy of the team's shared fixture folder, with its
README, which holds the provenance of every file, and the licences of the source projects in
``LICENSES/``), so a clone with nothing beside it runs the whole suite. Nothing here looks outside
the repository. Each interaction becomes an ``httpx2.Response`` served by an
``httpx2.MockTransport``, and each request our provider sends is kept so a test can compare it with
the recorded one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"

PROVIDER_FOLDERS = ("anthropic", "gemini", "ollama", "openai-chat", "openai-embeddings", "openai-responses")
"""Every folder of recordings; ``test_fixture_tree`` fails when another one appears."""


def fixture_files(provider: str) -> list[str]:
    """Names (without ``.yaml``) of every recorded file of one provider folder.

    An absent or empty folder is an error, not an empty list: the replay tests are parametrised
    over this list, and an empty one would let them pass by running nothing.
    """
    names = sorted(p.stem for p in (FIXTURES / provider).glob("*.yaml"))
    if not names:
        raise FileNotFoundError(f"no recordings in {FIXTURES / provider}: the repository's fixtures are incomplete")
    return names


@cache
def load(provider: str, name: str) -> dict[str, Any]:
    path = FIXTURES / provider / f"{name}.yaml"
    if not path.exists():
        pytest.fail(f"fixture {path} is missing from the repository")
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def interactions(provider: str, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = load(provider, name)["interactions"]
    return found


def recorded_response(interaction: dict[str, Any]) -> httpx2.Response:
    """The recorded reply, byte for byte where it was a stream."""
    response = interaction["response"]
    headers = dict(response.get("headers") or {})
    if "sse" in response:
        headers.setdefault("content-type", "text/event-stream")
        return httpx2.Response(response["status"], headers=headers, content=response["sse"].encode())
    if "ndjson" in response:
        headers.setdefault("content-type", "application/x-ndjson")
        return httpx2.Response(response["status"], headers=headers, content=response["ndjson"].encode())
    if "body" in response:
        headers["content-type"] = "application/json"
        return httpx2.Response(response["status"], headers=headers, content=json.dumps(response["body"]).encode())
    return httpx2.Response(response["status"], headers=headers, text=response.get("body_text", ""))


@dataclass
class Replay:
    """A MockTransport handler that serves a file's interactions in order and keeps what was sent."""

    provider: str
    name: str
    sent: list[httpx2.Request] = field(default_factory=list)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        recorded = interactions(self.provider, self.name)
        index = len(self.sent)
        self.sent.append(request)
        if index >= len(recorded):
            return httpx2.Response(599, text=f"{self.name}: more requests than recorded interactions")
        return recorded_response(recorded[index])

    def sent_json(self, index: int) -> Any:
        return json.loads(self.sent[index].content)

    def recorded_request(self, index: int) -> dict[str, Any]:
        request: dict[str, Any] = interactions(self.provider, self.name)[index]["request"]
        return request

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self)
