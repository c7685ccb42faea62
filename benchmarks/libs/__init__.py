"""One adapter per library and wire format, all with the same optional methods:

``call`` / ``acall`` (S1), ``tool_loop`` / ``atool_loop`` (S2), ``s3_blocking`` (sync API, blocking
tools) / ``as3_async`` (async API, async tools), ``stream`` / ``astream`` (S4, text deltas),
``aconfirm_round_trip`` and ``atools50_loop`` (S7). A method a library cannot offer is missing, with
the reason in the adapter's ``NA`` mapping. S8 (the cost per tool) is measured for raw httpx2 and
chatclient only: ``call_tools50`` / ``call_tools200`` and their ``a`` twins (one call offering that
many tools), ``loop5_tools1`` / ``loop5_tools50`` and their ``a`` twins (the 5-round loop).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backends import Backend

LIBS = ("raw", "sdk", "langchain", "pydantic-ai", "agents", "chatclient")
"""In table order: the floor first, chatclient last."""

LABELS = {
    "raw": "raw httpx2",
    "sdk": "official SDK",
    "langchain": "LangChain",
    "pydantic-ai": "pydantic-ai",
    "agents": "OpenAI Agents SDK",
    "chatclient": "chatclient",
}

# The main import of each library for S6, per wire: what a user imports to make one call.
IMPORTS: dict[str, dict[str, str]] = {
    "raw": {
        "openai": "import httpx2",
        "anthropic": "import httpx2",
        "gemini": "import httpx2",
        "bedrock": "import httpx2; import botocore.auth",
    },
    "sdk": {"openai": "import openai", "anthropic": "import anthropic"},
    "langchain": {
        "openai": "from langchain_openai import ChatOpenAI",
        "anthropic": "from langchain_anthropic import ChatAnthropic",
    },
    "pydantic-ai": {
        "openai": "from pydantic_ai import Agent; from pydantic_ai.models.openai import OpenAIChatModel; "
        "from pydantic_ai.providers.openai import OpenAIProvider",
        "anthropic": "from pydantic_ai import Agent; from pydantic_ai.models.anthropic import AnthropicModel; "
        "from pydantic_ai.providers.anthropic import AnthropicProvider",
    },
    "agents": {"openai": "from agents import Agent, Runner, OpenAIChatCompletionsModel"},
    "chatclient": {
        "openai": "from chatclient import ChatClient; from providers.openai import OpenAIChatModel",
        "anthropic": "from chatclient import ChatClient; from providers.anthropic import AnthropicChatModel",
        "gemini": "from chatclient import ChatClient; from providers.gemini import GeminiChatModel",
        "bedrock": "from chatclient import ChatClient; from providers.bedrock import BedrockChatModel",
    },
}

# The distributions whose versions the report lists, per library.
DISTRIBUTIONS = {
    "raw": ("httpx2",),
    "sdk": ("openai", "anthropic"),
    "langchain": ("langchain-core", "langchain-openai", "langchain-anthropic"),
    "pydantic-ai": ("pydantic-ai-slim",),
    "agents": ("openai-agents",),
    "chatclient": ("chatclient", "pydantic"),
}


def _factory(lib: str) -> Callable[[str, Backend], Any]:
    if lib == "raw":
        from .raw import RawAdapter

        return RawAdapter
    if lib == "sdk":
        from .official import make as make_official

        return make_official
    if lib == "langchain":
        from .langchain_peer import LangChainAdapter

        return LangChainAdapter
    if lib == "pydantic-ai":
        from .pydantic_ai_peer import PydanticAIAdapter

        return PydanticAIAdapter
    if lib == "agents":
        from .agents_peer import AgentsAdapter

        return AgentsAdapter
    if lib == "chatclient":
        from .chatclient_lib import ChatClientAdapter

        return ChatClientAdapter
    raise ValueError(f"unknown library {lib!r}; known: {', '.join(LIBS)}")


def supports_wire(lib: str, wire: str) -> bool:
    return wire in IMPORTS[lib]


def unsupported(lib: str, wire: str) -> str:
    """Why a library has no row on a wire."""
    return "n/a (OpenAI wire only)" if lib == "agents" else f"n/a (not driven on the {wire} wire)"


def make(lib: str, wire: str, backend: Backend) -> Any:
    """The adapter; raises whatever the library raised when it is missing or broken."""
    return _factory(lib)(wire, backend)


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").replace("|", "/")
    return text if len(text) <= 120 else text[:117] + "..."
