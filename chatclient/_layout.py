"""Telling a user that their own ``advisors`` or ``providers`` package hides ours.

chatclient ships three top-level packages side by side: ``chatclient``, ``providers`` and
``advisors``. Those last two names are common in applications, and Python imports the first package
of a name that it finds on ``sys.path``; the directory of the script being run comes first. So a
user's own ``advisors/`` next to their script silently replaces ours, and the first sign of it is
``No module named 'advisors.tool_calling'`` from deep inside ``ChatClient``: true, and no help.

:class:`own_package` guards the few places where chatclient imports one of its sibling packages
lazily. It costs nothing on success (the check runs only when the import fails) and turns a failure
caused by shadowing into one :class:`~chatclient.errors.ConfigurationError` that names both
packages and says what to do. A failure with any other cause (a missing optional dependency, a bug)
is left as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType, TracebackType

from .errors import ConfigurationError

__all__ = ["ShadowedPackageError", "own_package", "shadowing"]

_DISTRIBUTION_ROOT = Path(__file__).resolve().parent.parent
"""Where ``chatclient`` is installed; ``providers`` and ``advisors`` are installed beside it."""


class ShadowedPackageError(ConfigurationError):
    """Another package of the same top-level name was imported instead of ours.

    A subclass of ``ConfigurationError`` (what callers catch); its own name only makes the cause
    plain in a traceback.
    """


def _locations(module: ModuleType) -> list[Path]:
    """The files or folders a module was loaded from (a namespace package has only folders)."""
    file = getattr(module, "__file__", None)
    if file:
        path = Path(file).resolve()
        return [path.parent if path.name == "__init__.py" else path]
    return [Path(entry).resolve() for entry in getattr(module, "__path__", ())]


def shadowing(package: str) -> ShadowedPackageError | None:
    """The error to raise when the imported ``package`` is not the one installed beside chatclient.

    ``None`` when it is ours, when it was not imported at all, or when ours is not installed either
    (then the failure is a broken installation, not shadowing, and the original error says more).
    """
    ours = _DISTRIBUTION_ROOT / package
    loaded = sys.modules.get(package)
    if loaded is None or not (ours / "__init__.py").is_file():
        return None
    where = _locations(loaded)
    if ours in where:
        return None
    found = ", ".join(str(path) for path in where) or repr(loaded)
    return ShadowedPackageError(
        f"The top-level package {package!r} that Python imported is not chatclient's: it comes from {found}, "
        f"while chatclient's is at {ours}. A package or module named {package!r} earlier on sys.path (the "
        f"directory of the script being run comes first) hides the one chatclient installs, so chatclient "
        f"cannot load its own {package}. Rename your {package!r} package (for example to 'myapp_{package}'), "
        f"or move it inside your application's own package, so that the name {package!r} at the top level "
        f"is chatclient's."
    )


class own_package:
    """``with own_package("advisors"): from advisors.x import y`` - shadowing becomes a clear error.

    A class rather than ``contextlib.contextmanager``: it guards an import that runs on every
    ``ChatClient`` construction, and a plain object with two methods is the cheapest guard.
    """

    __slots__ = ("_package",)

    def __init__(self, package: str) -> None:
        self._package = package

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if error is not None and isinstance(error, (ImportError, AttributeError)):
            shadowed = shadowing(self._package)
            if shadowed is not None:
                raise shadowed from error
