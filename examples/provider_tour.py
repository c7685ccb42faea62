"""One tool-calling conversation (a weather tool) on every provider, through ``providers.create``.

By default each provider runs offline against real traffic recorded from its service
(``tests/fixtures/provider-traffic`` in this repository, served through an ``httpx2.MockTransport``;
its README says where each recording comes from): the model,
the tool loop and the tools are real, only the network is replayed. Each recording has its own
question and tool, so the offline conversations differ a little; the code is the same.

Set a provider's credentials to talk to the real service instead, with the Berlin weather question:
``OPENAI_API_KEY`` (``openai``, ``openai-responses``), ``ANTHROPIC_API_KEY`` (``anthropic``),
``OLLAMA_HOST`` (``ollama``, and Ollama's OpenAI-compatible ``/v1`` through the ``openai``
provider), ``GEMINI_API_KEY`` (``gemini``). ``OPENAI_MODEL``, ``ANTHROPIC_MODEL``, ``OLLAMA_MODEL`` and
``GEMINI_MODEL`` choose the models.

Run from the repository root: ``.venv/bin/python examples/provider_tour.py``. (Not named
``providers.py``: that would shadow the ``providers`` package and clash with it under mypy.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

import providers
from chatclient import ChatClient, ChatModel, tool

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "provider-traffic"

# ---------------------------------------------------------------------- the tools

TOOL_LOG: list[str] = []


def _log(name: str, result: str, **arguments: str) -> str:
    args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    TOOL_LOG.append(f"{name}({args}) -> {result}")
    return result


@tool(description="Gets current weather for a location")
def weather(latitude: str, longitude: str) -> str:
    return _log("weather", f"Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h", **locals())


@tool(description="Gets the temperature of a city in degrees Celsius")
def get_temperature(city: str) -> str:
    return _log("get_temperature", "20.0", city=city)


@tool(description="Get the current weather in a city.")
def get_current_weather(city: str) -> str:
    return _log("get_current_weather", f"The weather in {city} is 21 degrees and sunny.", city=city)


@tool(description="Gets the best language to learn")
def best_language_to_learn() -> str:
    return _log("best_language_to_learn", "Ruby")


SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}


@tool(description="A tool that requires a password to retrieve a secret.")
def secret_retrieval_tool(password: str) -> str:
    return _log("secret_retrieval_tool", SECRETS.get(password, "no secret"), password=password)


@dataclass(frozen=True)
class Conversation:
    question: str
    tools: Sequence[Any]
    system: str | None = None


BERLIN = Conversation("What's the weather in Berlin? (52.5200, 13.4050)", [weather])
"""The conversation every provider has with its real service."""

# ---------------------------------------------------------------------- the providers


@dataclass(frozen=True)
class Row:
    label: str
    provider: str
    """The ``providers.create`` prefix."""
    module: str
    offline_model: str
    recording: Sequence[tuple[str, str, int]]
    """``(folder, file, interaction)`` served in order."""
    offline: Conversation
    live_env: str
    live_model: Callable[[], str]
    extra: dict[str, Any] = field(default_factory=dict)
    """Constructor arguments of the offline run."""
    live_extra: Callable[[], dict[str, Any]] = dict
    """Constructor arguments of the live run."""
    note: str = ""


def ollama_host() -> str:
    host = os.environ.get("OLLAMA_HOST", "localhost:11434").rstrip("/")
    return host if "://" in host else f"http://{host}"


ROWS = [
    Row(
        "openai",
        "openai",
        "providers.openai",
        "gpt-4.1-mini",
        [("openai-chat", "b_single_tool_call_roundtrip", 0), ("openai-chat", "b_single_tool_call_roundtrip", 1)],
        Conversation("What is the temperature in Tokyo?", [get_temperature], "You are a helpful assistant."),
        "OPENAI_API_KEY",
        lambda: os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
    ),
    Row(
        "openai-responses",
        "openai-responses",
        "providers.openai_responses",
        "gpt-5-nano",
        [
            ("openai-responses", "b_single_function_call_with_encrypted_reasoning", 0),
            ("openai-responses", "b_single_function_call_with_encrypted_reasoning", 1),
        ],
        BERLIN,
        "OPENAI_API_KEY",
        lambda: os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
    ),
    Row(
        "anthropic",
        "anthropic",
        "providers.anthropic",
        "claude-haiku-4-5-20251001",
        [("anthropic", "b_single_tool_use_roundtrip", 0), ("anthropic", "b_single_tool_use_roundtrip", 1)],
        BERLIN,
        "ANTHROPIC_API_KEY",
        lambda: os.environ.get("ANTHROPIC_MODEL", "claude-haiku-4-5"),
    ),
    Row(
        "ollama",
        "ollama",
        "providers.ollama",
        "qwen3.6:latest",
        [("ollama", "native_b_tool_call", 0), ("ollama", "native_b_tool_result_request", 0)],
        Conversation("What is the weather in Paris? Use the get_current_weather tool.", [get_current_weather]),
        "OLLAMA_HOST",
        lambda: os.environ.get("OLLAMA_MODEL", "qwen3"),
        note="two separate recordings (2026 tool call, 2024 answer), so the answer does not match the question",
    ),
    Row(
        "ollama-openai",
        "openai",
        "providers.openai",
        "qwen3",
        [
            ("ollama", "openai_compat_c_parallel_tool_calls_roundtrip", 0),
            ("ollama", "openai_compat_c_parallel_tool_calls_roundtrip", 1),
        ],
        Conversation(
            "What's the weather in Berlin (52.5200, 13.4050) and what's the best language to learn?",
            [weather, best_language_to_learn],
        ),
        "OLLAMA_HOST",
        lambda: os.environ.get("OLLAMA_MODEL", "qwen3"),
        extra={"base_url": "http://localhost:11434/v1"},
        live_extra=lambda: {"base_url": f"{ollama_host()}/v1"},
        note="Ollama's OpenAI-compatible /v1 through the openai provider",
    ),
    Row(
        "gemini",
        "gemini",
        "providers.gemini",
        "gemini-2.5-flash",
        [
            ("gemini", "c_parallel_function_calls_roundtrip", 0),
            ("gemini", "c_parallel_function_calls_roundtrip", 1),
        ],
        Conversation(
            "Please retrieve the secrets associated with each of these passwords: mellon,radiance",
            [secret_retrieval_tool],
            "Use parallel tool calling.",
        ),
        "GEMINI_API_KEY",
        lambda: os.environ.get("GEMINI_MODEL", "gemini-2.5-flash"),
    ),
]

# ---------------------------------------------------------------------- replaying recorded traffic


def replay_transport(recording: Sequence[tuple[str, str, int]]) -> httpx2.MockTransport:
    """Serves the recorded replies in order, whatever was asked (the tests check the requests)."""
    try:
        import yaml  # the recordings are YAML: installed by `make demo` (the `demo` extra) and by `dev`
    except ModuleNotFoundError:
        raise SystemExit(
            "provider_tour.py replays recordings kept as YAML and needs PyYAML: run it in the venv "
            "`make demo` creates, or `pip install 'chatclient[demo]'` (or pyyaml)"
        ) from None

    replies = []
    for folder, name, index in recording:
        document = yaml.safe_load((FIXTURES / folder / f"{name}.yaml").read_text())
        replies.append(document["interactions"][index]["response"])

    def handle(request: httpx2.Request) -> httpx2.Response:
        if not replies:
            return httpx2.Response(599, text="the recording has no more replies")
        response = replies.pop(0)
        headers = dict(response.get("headers") or {})
        if "sse" in response:
            headers.setdefault("content-type", "text/event-stream")
            return httpx2.Response(response["status"], headers=headers, content=response["sse"].encode())
        if "ndjson" in response:
            headers.setdefault("content-type", "application/x-ndjson")
            return httpx2.Response(response["status"], headers=headers, content=response["ndjson"].encode())
        headers["content-type"] = "application/json"
        return httpx2.Response(response["status"], headers=headers, content=json.dumps(response["body"]).encode())

    return httpx2.MockTransport(handle)


# ---------------------------------------------------------------------- the conversation


def converse(model: ChatModel, conversation: Conversation) -> tuple[str | None, str]:
    client = ChatClient.builder(model).default_tools(*conversation.tools).build()
    spec = client.prompt()
    if conversation.system:
        spec = spec.system(conversation.system)
    response = spec.user(conversation.question).call().chat_response()
    assert response is not None
    usage = response.usage
    return response.text, f"{usage.prompt_tokens} in / {usage.completion_tokens} out (all rounds)"


def one_line(text: str | None, limit: int = 110) -> str:
    line = " ".join((text or "").split()) or "(no text)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def run(row: Row) -> bool:
    """One provider; False when it failed."""
    if importlib.util.find_spec(row.module) is None:
        print(f"[{row.label}] skipped: {row.module} is not available yet")
        return True
    live = bool(os.environ.get(row.live_env))
    if live:
        conversation = BERLIN
        model = providers.create(f"{row.provider}:{row.live_model()}", **row.live_extra())
        print(f"[{row.label}] live: {model!r}")
    else:
        if not FIXTURES.is_dir():
            # A failure, not a skip: the recordings ship with the repository, so their absence means a
            # broken checkout, and exiting 0 would let the tour "pass" without showing anything.
            print(f"[{row.label}] failed: no recordings at {FIXTURES} and {row.live_env} is not set")
            return False
        conversation = row.offline
        transport = replay_transport(row.recording)
        model = providers.create(
            f"{row.provider}:{row.offline_model}",
            api_key="replayed-no-real-key",
            http_client=httpx2.Client(transport=transport),
            **row.extra,
        )
        files = sorted({f"{folder}/{name}.yaml" for folder, name, _ in row.recording})
        print(f"[{row.label}] replay of {', '.join(files)}" + (f" ({row.note})" if row.note else ""))
    TOOL_LOG.clear()
    try:
        text, usage = converse(model, conversation)
    except Exception as exc:  # an example reports and goes on with the next provider
        print(f"    failed: {type(exc).__name__}: {exc}")
        return False
    print(f"    user:   {conversation.question}")
    for entry in sorted(TOOL_LOG):  # the tools of one reply run concurrently
        print(f"    tool:   {entry}")
    print(f"    answer: {one_line(text)}")
    print(f"    usage:  {usage}")
    return True


def main() -> int:
    results = [run(row) for row in ROWS]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
