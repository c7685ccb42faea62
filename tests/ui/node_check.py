"""Runs tests/ui/node/check_ui_stream.mjs: the ``ai`` package's own parser reads a recorded stream.

The package is installed from tests/ui/node/package-lock.json by ``make ui-node`` (``make unit`` and
CI run it). Without node or that install the tests skip, except under CI=true where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
SCRIPT = NODE_DIR / "check_ui_stream.mjs"


def _unavailable() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (NODE_DIR / "node_modules" / "ai" / "package.json").is_file():
        return "the ai package is not installed: run `make ui-node` (npm ci in tests/ui/node)"
    return None


def read_with_ai_package(stream: str, tmp_path: Path, prior: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the ``ai`` package makes of ``stream``: ``{version, chunks, errors, message}``."""
    reason = _unavailable()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the UI message stream cannot be checked under CI: {reason}")
        pytest.skip(reason)
    recorded = tmp_path / "stream.sse"
    recorded.write_text(stream, encoding="utf-8")
    command = ["node", str(SCRIPT), str(recorded)]
    if prior is not None:
        (tmp_path / "prior.json").write_text(json.dumps(prior), encoding="utf-8")
        command.append(str(tmp_path / "prior.json"))
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed
