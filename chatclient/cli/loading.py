"""``--tools module:object``: import what the user named and hand it to ``spec.tools()``."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from .errors import UsageError


def load_object(reference: str) -> Any:
    """The object named ``module:attribute`` (the attribute may be dotted); the current directory is
    importable, as it is for ``python -m``. A class is instantiated, so a class of ``@tool`` methods
    can be named directly."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"--tools {reference!r}: expected module:object, e.g. my_tools:weather")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(f"--tools {reference!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise UsageError(f"--tools {reference!r}: {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, part)
    if isinstance(found, type):
        try:
            found = found()
        except Exception as exc:
            raise UsageError(f"--tools {reference!r}: cannot create {found.__qualname__}(): {exc}") from exc
    return found
