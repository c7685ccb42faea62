"""Storage plumbing sits below both features that keep state: memory and the pending stores use
``chatclient._storage`` and never each other, so importing a pending store (or one memory store)
loads neither the memory advisor nor anything else it does not use. The old
``chatclient.tools.pending*`` paths still work for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MOVED = {
    "chatclient.tools.pending": "chatclient.pending.state",
    "chatclient.tools.pending_sqlite": "chatclient.pending.sqlite",
    "chatclient.tools.pending_postgres": "chatclient.pending.postgres",
    "chatclient.tools.pending_redis": "chatclient.pending.redis",
    "chatclient.tools.pending_outage": "chatclient.pending.outage",
}


def imported_by(package: str) -> dict[str, set[str]]:
    """Module -> every module it names in an import: at module level, in a function and under
    ``TYPE_CHECKING`` alike (relative imports resolved; ``from x import y`` counts ``x`` and ``x.y``)."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package.replace(".", "/")).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        here = parts[:-1]  # the package a relative import starts from
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(
                    [*here[: len(here) - node.level + 1], node.module or ""] if node.level else [node.module or ""]
                )
                base = base.strip(".")
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
        found[module] = names
    return found


def offenders(package: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    hits = {
        module: sorted(n for n in names if any(n == f or n.startswith(f + ".") for f in forbidden))
        for module, names in imported_by(package).items()
    }
    return {module: names for module, names in hits.items() if names}


def test_the_resolver_sees_relative_imports_in_functions_and_under_type_checking() -> None:
    # the checks below are only as good as this: pending.state imports _storage inside a function
    names = imported_by("chatclient.pending")["chatclient.pending.state"]
    assert {"chatclient._storage.sqlite", "chatclient.tools.confirmation", "chatclient.messages"} <= names


def test_storage_plumbing_imports_no_feature() -> None:
    features = ("chatclient.memory", "chatclient.pending", "chatclient.tools", "chatclient.mcp", "chatclient.tracing")
    assert offenders("chatclient._storage", features) == {}


def test_memory_and_the_pending_stores_never_import_each_other() -> None:
    assert offenders("chatclient.pending", ("chatclient.memory",)) == {}
    assert offenders("chatclient.memory", ("chatclient.pending", *MOVED)) == {}


def loaded_after(statement: str) -> list[str]:
    code = f"{statement}; import sys; print(sorted(m for m in sys.modules if m.startswith('chatclient')))"
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = ast.literal_eval(result.stdout.strip())
    return loaded


@pytest.mark.parametrize(
    "module", ["chatclient.pending.sqlite", "chatclient.pending.redis", "chatclient.pending.postgres"]
)
def test_a_pending_store_loads_nothing_of_memory(module: str) -> None:
    loaded = loaded_after(f"import {module}")
    assert [m for m in loaded if m.startswith("chatclient.memory")] == []
    assert len(loaded) < 30, loaded  # the SQLite nonce ledger loaded 44 before the plumbing was shared


@pytest.mark.parametrize(
    "statement", ["import chatclient.memory.sqlite", "from chatclient.memory import CONVERSATION_ID"]
)
def test_one_part_of_memory_loads_neither_its_advisor_nor_the_other_stores(statement: str) -> None:
    loaded = loaded_after(statement)
    unused = {"chatclient.memory.advisor", "chatclient.memory.compaction", "chatclient.memory.redis"}
    assert unused.isdisjoint(loaded), sorted(unused & set(loaded))


def test_memory_still_exports_every_name_it_lists() -> None:
    import chatclient.memory as memory

    assert all(getattr(memory, name) is not None for name in memory.__all__)
    assert memory.SqliteSessionRepository is importlib.import_module("chatclient.memory.sqlite").SqliteSessionRepository
    with pytest.raises(AttributeError):
        memory.NoSuchName  # noqa: B018


def test_the_pending_package_exports_every_name_it_lists() -> None:
    import chatclient.pending as pending

    assert all(getattr(pending, name) is not None for name in pending.__all__)
    assert pending.SqliteNonceLedger is importlib.import_module("chatclient.pending.sqlite").SqliteNonceLedger


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_warns_and_is_the_moved_module(old: str, new: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)  # private names too: patching one patches the other


def test_the_warning_points_at_the_import_that_used_the_old_path() -> None:
    code = "import warnings; warnings.simplefilter('always')\nimport chatclient.tools.pending_sqlite"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stderr.startswith("<string>:2: DeprecationWarning: chatclient.tools.pending_sqlite moved"), (
        result.stderr
    )


def test_names_public_in_chatclient_tools_stay_importable_without_a_warning() -> None:
    names = "InMemoryNonceLedger, InMemoryPendingToolCallStore, SqlitePendingToolCallStore, seal, unseal"
    loaded = loaded_after(f"from chatclient.tools import {names}")  # -W error: a warning would fail it
    assert "chatclient.pending.state" in loaded
