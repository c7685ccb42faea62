"""The layout keeps its promises: dependency direction, a curated public API, a light import.

Every import between our modules counts here: at module level, inside a function and under
``if TYPE_CHECKING:``. An import that runs late still ties the two modules together for a reader.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import chatclient

ROOT = Path(__file__).resolve().parent.parent


PACKAGES = ("chatclient", "advisors", "providers")

LAYERS: dict[str, int] = {
    # 0. plumbing that knows none of our types
    "chatclient._display": 0,  # the pieces of reprs and notebook rendering; each type renders itself
    "chatclient._lazy": 0,
    "chatclient._redact": 0,
    "chatclient._readonly": 0,
    "chatclient._sync": 0,
    "chatclient._trusted": 0,
    "chatclient._version": 0,
    # 1. values
    "chatclient.errors": 1,
    "chatclient._keys": 1,
    "chatclient._context_keys": 1,  # plain strings: any layer may read a context
    "chatclient._layout": 1,
    "chatclient.templates": 1,  # prompt templates and their renderers
    "chatclient.messages": 1,
    "chatclient.responses": 1,
    # 2. the tool SPI: callbacks, definitions, @tool functions and their resolution
    "chatclient.tools": 2,
    # 3. options, prompt and confirmation values
    "chatclient.options": 3,
    "chatclient.prompt": 3,
    "chatclient._builders": 3,
    "chatclient._option_keywords": 3,
    "chatclient.tools.confirmation": 3,
    "chatclient.tools.resume": 3,
    "chatclient.tools.rules": 3,  # approval rules and the inline handler: values over confirmation
    # 4. the request/response envelope and its context keys, and what reads them
    "chatclient.envelope": 4,
    "chatclient.turn": 4,
    "chatclient.durable": 4,  # a turn's recorded progress, its continuation and budgets: values
    "chatclient.usage": 4,  # cost_of() prices a ChatClientResponse too
    # 5. the model SPI and the stream events (TurnFinished holds a ChatClientResponse)
    "chatclient.model": 5,
    "chatclient.events": 5,
    "chatclient.streaming": 5,
    # 6. the advisor SPI and observation
    "chatclient.advisor": 6,
    "chatclient.observation": 6,
    # 7. engines: the chain, tool execution and its manager, structured output
    "chatclient._chain": 7,
    "chatclient.tools._execution": 7,
    "chatclient.tools.manager": 7,
    "chatclient.structured_output": 7,
    # 8. features over the shared storage plumbing; the built-in advisors and the providers
    "chatclient._storage": 8,
    "chatclient.memory": 8,
    "chatclient.pending": 8,
    "chatclient.tools._old_paths": 8,  # deprecated paths of the pending stores
    "chatclient.mcp": 8,
    "chatclient.tracing": 8,
    "chatclient.retrieval": 8,  # documents, embedding SPI, vector stores (their drivers load lazily)
    "advisors": 8,
    "providers": 8,
    # 9. the client
    "chatclient._model_ref": 9,  # reaches the provider registry for a model string
    "chatclient.client": 9,
    "chatclient.response_spec": 9,
    # 10. applications on top
    "chatclient.cli": 10,
    "chatclient.testing": 10,
    "chatclient.ui": 10,  # wire formats for browsers over the client's events and pending stores
    "chatclient.__main__": 10,
}
"""Bottom to top, each module (or package: its modules without an entry of their own) and its layer.
A module imports only modules of its own layer or below, at every kind of import. A new module
needs an entry here: that is where its place in the architecture is decided."""

CLIENT_REACHES_ITS_SIBLINGS = {
    ("chatclient.client", "advisors.tool_calling"),
    ("chatclient._model_ref", "providers._registry"),
}
"""The only imports from ``chatclient`` into ``advisors``/``providers``, both lazy and guarded by
``own_package``: the client auto-registers the tool loop, and builds a model from a registry string."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()
FACADES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def _known(name: str) -> str | None:
    """The longest of our modules that ``name`` names (a class imported from a module names the module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, at every kind of import: module level, in a function,
    under ``if TYPE_CHECKING:``. ``from package import submodule`` counts as importing the submodule."""
    found: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(_known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, *([node.module] if node.module else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in MODULES else _known(base))
        found[module] = {t for t in targets if t is not None and t != module}
    return found


IMPORTS = imports()


def layer_of(module: str) -> int | None:
    name = module
    while name:
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    return None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(IMPORTS) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_has_a_layer() -> None:
    assert layer_of("chatclient.brand_new") is None, "the root has no layer: each new module is placed"
    missing = sorted(m for m in MODULES if m not in FACADES and layer_of(m) is None)
    assert not missing, f"add these modules to LAYERS in tests/test_architecture.py, at their layer: {missing}"


def test_every_import_points_down_the_layers() -> None:
    upward = [
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in IMPORTS.items()
        if module not in FACADES
        for target in targets
        if target not in FACADES and (layer_of(target) or 0) > (layer_of(module) or 0)
    ]
    assert not upward, "\n".join(upward)


def _is_application(module: str) -> bool:
    return module.startswith(("chatclient.cli", "chatclient.testing")) or module == "chatclient.__main__"


def test_chatclient_imports_neither_providers_nor_advisors() -> None:
    offenders = [
        (module, target)
        for module, targets in IMPORTS.items()
        if module.split(".")[0] == "chatclient" and not _is_application(module)
        for target in targets
        if target.split(".")[0] in ("providers", "advisors") and (module, target) not in CLIENT_REACHES_ITS_SIBLINGS
    ]
    assert not offenders


def test_the_client_imports_no_feature() -> None:
    """Memory, MCP and tracing plug into the client (advisors, tool providers, observers); the
    client knows none of them, so each can change or go without touching it."""
    features = ("chatclient.memory", "chatclient.mcp", "chatclient.tracing")
    for module in ("chatclient.client", "chatclient.response_spec"):
        assert not {t for t in IMPORTS[module] if t.startswith(features)}, module


def test_providers_and_advisors_never_import_each_other() -> None:
    offenders = [
        (module, target)
        for module, targets in IMPORTS.items()
        for target in targets
        if {module.split(".")[0], target.split(".")[0]} == {"providers", "advisors"}
    ]
    assert not offenders


def test_no_module_imports_a_facade_but_its_parent_and_the_applications() -> None:
    """Inside the library a name comes from the module that defines it: a package's ``__init__``
    re-exports for applications, and importing it from below ties the package to all of it."""
    offenders = [
        (module, target)
        for module, targets in IMPORTS.items()
        if not _is_application(module)
        for target in targets
        if target in FACADES and not (module in FACADES and target.rpartition(".")[0] == module)
    ]
    assert not offenders


def test_the_import_finder_sees_every_kind_of_import() -> None:
    # a function-level import (advisors.tool_calling), one under TYPE_CHECKING (events -> confirmation),
    # and a submodule imported from its package by name (tracing.observer -> tracing._names)
    assert "advisors.tool_calling" in IMPORTS["chatclient.client"]
    assert "chatclient.tools.confirmation" in IMPORTS["chatclient.events"]
    assert "chatclient.tracing._names" in IMPORTS["chatclient.tracing.observer"]


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
    providers = ("openai", "anthropic", "ollama", "openai_responses", "gemini")
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
