"""Every example runs offline and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

EXPECTED = {
    "hello.py": ["call:   Hello! How can I help?", "entity: [City(name='Paris'", "acall:  Async works"],
    "tools.py": ["answer: Beijing is sunny at 28°C; Q3 sales were 1,250,000.", "model rounds: 4, sales queries: 2"],
    "custom_advisor.py": [
        "[call] answer='You have 1,024 EUR.' model saw='What is on [redacted]?'",
        "[astream] answer='You have 1,024 EUR.'",
        "-> tool calls ['account_balance']",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    for line in EXPECTED[name]:
        assert line in result.stdout, f"{line!r} missing from:\n{result.stdout}"


def test_every_example_is_covered() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)
