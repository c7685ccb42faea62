"""A user's own top-level ``advisors`` or ``providers`` package hides ours: one clear error says so.

Each case runs in a subprocess whose working directory holds the user's package, as when a user
runs a script next to their own ``advisors/``: the directory of the script (here ``-c``'s current
directory) comes first on ``sys.path``. The subprocess keeps this interpreter's ``sys.path`` after
that, so the installed chatclient is found as usual.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import advisors
from chatclient._layout import ShadowedPackageError, shadowing
from chatclient.errors import ConfigurationError

ROOT = Path(__file__).resolve().parent.parent


def run(code: str, cwd: Path) -> str:
    """Runs ``code`` in a fresh interpreter in ``cwd``; returns its stdout (it must exit 0)."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


CLIENT = """
    from chatclient import ChatClient, ConfigurationError
    from chatclient.testing import ScriptedChatModel

    try:
        ChatClient(ScriptedChatModel(["hi"]))
    except ConfigurationError as error:
        print(type(error).__name__, "|", error, "|", type(error.__cause__).__name__)
    else:
        print("built")
"""


@pytest.mark.parametrize("layout", ["package", "module"])
def test_a_users_own_advisors_hides_ours_and_chatclient_says_so(tmp_path: Path, layout: str) -> None:
    if layout == "package":
        (tmp_path / "advisors").mkdir()
        (tmp_path / "advisors" / "__init__.py").write_text('"""The user\'s advisors."""\n')
        theirs = tmp_path / "advisors"
    else:
        (tmp_path / "advisors.py").write_text('"""The user\'s advisors."""\n')
        theirs = tmp_path / "advisors.py"

    out = run(CLIENT, tmp_path)

    kind, message, cause = (part.strip() for part in out.split("|"))
    assert kind == "ShadowedPackageError"
    assert cause == "ModuleNotFoundError"
    assert str(theirs.resolve()) in message
    assert str(ROOT / "advisors") in message
    assert "Rename your 'advisors' package" in message


def test_a_users_advisors_with_a_tool_calling_module_of_its_own_is_caught_too(tmp_path: Path) -> None:
    (tmp_path / "advisors").mkdir()
    (tmp_path / "advisors" / "__init__.py").write_text("")
    (tmp_path / "advisors" / "tool_calling.py").write_text("HELPER = 1\n")

    kind, _, cause = (part.strip() for part in run(CLIENT, tmp_path).split("|"))

    assert (kind, cause) == ("ShadowedPackageError", "ImportError")


def test_without_shadowing_the_client_builds(tmp_path: Path) -> None:
    assert run(CLIENT, tmp_path).strip() == "built"


def test_the_registry_names_a_shadowing_providers_package(tmp_path: Path) -> None:
    """Ours is imported first; then the name ``providers`` is resolved again and finds the user's.

    (That happens when ``sys.modules`` is purged, as reloaders do, with the user's folder on the
    path. A user whose ``import providers`` finds their own package never reaches our registry.)
    """
    shadow = tmp_path / "app"
    (shadow / "providers").mkdir(parents=True)
    (shadow / "providers" / "__init__.py").write_text("")
    code = f"""
        import sys
        import providers
        from chatclient import ConfigurationError

        sys.path.insert(0, {str(shadow)!r})
        del sys.modules["providers"]
        try:
            providers.create("ollama:qwen3")
        except ConfigurationError as error:
            print(type(error).__name__, "|", error)
    """
    kind, message = (part.strip() for part in run(code, tmp_path).split("|"))

    assert kind == "ShadowedPackageError"
    assert str(shadow / "providers") in message
    assert str(ROOT / "providers") in message


def test_our_own_packages_are_not_reported() -> None:
    assert advisors.__name__ == "advisors"
    assert shadowing("advisors") is None
    assert shadowing("no_such_package_here") is None
    assert issubclass(ShadowedPackageError, ConfigurationError)
