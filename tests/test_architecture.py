"""The layout keeps its promises: dependency direction, a curated public API, a light import."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import chatclient

ROOT = Path(__file__).resolve().parent.parent


def top_level_imports(package: str) -> dict[str, set[str]]:
    """Module -> the top-level packages it imports at module import time.

    Only statements at module level count: imports inside functions and under
    ``if TYPE_CHECKING:`` do not run on import."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        names: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_chatclient_imports_neither_providers_nor_advisors_at_import_time() -> None:
    offenders = {m: n & {"providers", "advisors"} for m, n in top_level_imports("chatclient").items()}
    assert not {m: n for m, n in offenders.items() if n}


def test_providers_and_advisors_never_import_each_other() -> None:
    for package, other in (("providers", "advisors"), ("advisors", "providers")):
        offenders = {m for m, names in top_level_imports(package).items() if other in names}
        assert not offenders, f"{package} imports {other}: {offenders}"
        for path in (ROOT / package).rglob("*.py"):
            assert f"import {other}" not in path.read_text() and f"from {other}" not in path.read_text()


def test_public_api_is_curated_sorted_and_complete() -> None:
    # dir(), not vars(): the root loads its exports on first use (PEP 562), so they are listed before they exist
    public = {
        name
        for name in dir(chatclient)
        if not name.startswith("_") and not isinstance(getattr(chatclient, name), types.ModuleType)
    }
    assert set(chatclient.__all__) == public | {"__version__"}
    assert chatclient.__all__[1:] == sorted(chatclient.__all__[1:], key=str.casefold)


def test_import_chatclient_loads_no_heavy_or_optional_module() -> None:
    code = "import sys, chatclient; print(','.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(result.stdout.strip().split(","))
    assert not loaded & {"advisors", "providers", "httpx", "httpx2", "mcp", "openai", "anthropic"}
    assert "chatclient.testing" not in loaded, "test doubles load only when asked for"


def test_import_of_chatclient_and_a_provider_loads_only_what_a_first_call_needs() -> None:
    # A plain call needs no stream events and no stream parser: those load with the first stream.
    providers = ("openai", "anthropic", "ollama", "openai_responses")
    imports = ", ".join(f"providers.{p}" for p in providers)
    code = f"import sys, chatclient, {imports}; print(','.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(result.stdout.strip().split(","))
    not_yet = {"asyncio", "chatclient.events", "chatclient.streaming", "chatclient.client", "chatclient.tools.manager"}
    not_yet |= {f"providers.{p}._stream_parser" for p in providers}
    assert not loaded & not_yet, sorted(loaded & not_yet)
    assert {f"providers.{p}.model" for p in providers} <= loaded


def test_the_root_holds_what_an_application_uses_and_the_rest_lives_in_named_modules() -> None:
    import chatclient.client
    import chatclient.events
    import chatclient.observation
    import chatclient.response_spec
    import chatclient.streaming
    import chatclient.tools

    elsewhere = {
        "ChatClientBuilder": chatclient.client,
        "ChatClientRequestSpec": chatclient.client,
        "CallResponseSpec": chatclient.response_spec,
        "StreamResponseSpec": chatclient.response_spec,
        "ChatResponseAccumulator": chatclient.streaming,
        "TextDelta": chatclient.events,
        "TurnFinished": chatclient.events,
        "ChatObserver": chatclient.observation,
        "ToolCallingManager": chatclient.tools,
        "ToolCallingManagerBuilder": chatclient.tools,
        "InMemoryPendingToolCallStore": chatclient.tools,
        "SqlitePendingToolCallStore": chatclient.tools,
        "seal": chatclient.tools,
        "unseal": chatclient.tools,
        "FunctionToolCallback": chatclient.tools,
    }
    for name, module in elsewhere.items():
        assert name not in chatclient.__all__, f"{name} is not for the root"
        assert hasattr(module, name), f"{name} must be importable from {module.__name__}"
    for name in ("ChatClient", "UserMessage", "tool", "ToolCallDecisions", "awaiting_decision", "turn_messages",
                 "BaseAdvisor", "ChatClientRequest", "ProviderError", "PendingStateReusedError"):  # fmt: skip
        assert name in chatclient.__all__
    assert len(chatclient.__all__) < 80
