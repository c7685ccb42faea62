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

__all__ = ["lazy_exports", "moved_module"]


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


def moved_module(old: str, new: str) -> None:
    """Called by a thin module left at a moved module's old path: ``old`` becomes ``new`` itself in
    ``sys.modules`` (its private names too, so code that patches them still patches the real ones),
    with a ``DeprecationWarning`` pointing at the importer. The old path goes one release later."""
    import warnings

    # stacklevel 3: past this function and the thin module; the import system's frames are skipped
    warnings.warn(
        f"{old} moved to {new}; import from there ({old} goes in the next release)", DeprecationWarning, stacklevel=3
    )
    sys.modules[old] = importlib.import_module(new)
