"""Built-in providers, one subpackage each (imported only when used), and a registry:
``providers.create("openai:gpt-4o-mini")`` gives a ``ChatModel`` from a string."""

import typing as _typing

from chatclient._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._registry import create, register

__all__ = ["create", "register"]

# The registry loads when first used: importing one provider does not need it.
__getattr__, __dir__ = _lazy_exports(__name__, {"._registry": ["create", "register"]})
