"""What the wheel promises its users: type information for every package and the licence text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("chatclient", "providers", "advisors")


def pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the suite runs on 3.11 in CI
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config


def test_every_package_is_marked_typed() -> None:
    """Without ``py.typed`` a ``mypy --strict`` user gets ``import-untyped`` for that package (PEP 561)."""
    assert [p for p in PACKAGES if not (ROOT / p / "py.typed").is_file()] == []


def test_the_wheel_ships_every_package_and_with_it_each_py_typed() -> None:
    """Hatchling puts every file of a listed package in the wheel, ``py.typed`` included."""
    assert sorted(pyproject()["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]) == sorted(PACKAGES)


def test_the_licence_file_is_the_one_pyproject_names() -> None:
    assert pyproject()["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
