"""Package exports loaded on first use (PEP 562), so ``import chatclient`` pays only for what is used.

A package lists ``name -> module`` and gets a module ``__getattr__`` and ``__dir__``; the names stay
importable from the same place (``from chatclient import tool``), and ``mypy`` sees them through the
package's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a module (relative, ``".messages"``)
    to the names it provides. A name is imported once, then kept in the package's namespace."""
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            return _submodule(package, name)
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return __getattr__, __dir__


def _submodule(package: str, name: str) -> Any:
    """``package.name`` as an attribute, as when the package imported its modules eagerly
    (``import chatclient; chatclient.events.TextDelta``)."""
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":  # it exists, but needs what is not installed
                raise AttributeError(f"module {package!r} has no attribute {name!r} ({exc})") from exc
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
