"""The MCP SDK is an extra: declared once, loaded only by ``chatclient.mcp``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(','.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(result.stdout.strip().split(","))


def test_neither_chatclient_nor_its_testing_kit_loads_the_mcp_sdk() -> None:
    assert "mcp" not in loaded_after("import chatclient, chatclient.testing, chatclient.tools")


def test_the_extra_is_declared_and_in_dev() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["mcp"] == ["mcp>=2.3,<3"]
    assert "mcp>=2.3,<3" in extras["dev"]


def test_without_the_sdk_chatclient_mcp_names_the_extra() -> None:
    code = "import sys; sys.modules['mcp'] = None; import chatclient.mcp"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "pip install 'chatclient[mcp]'" in result.stderr
