"""Built-in providers, one subpackage each (imported only when used), and a registry:
``providers.create("openai:gpt-4o-mini")`` gives a ``ChatModel`` from a string, and
``providers.create_embedding_model("openai:text-embedding-3-small")`` an embedding model."""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._registry import create, register

if _TYPE_CHECKING:
    from ._embedding_registry import create_embedding_model

__all__ = ["create", "create_embedding_model", "register"]


def __getattr__(name: str) -> _Any:
    """``create_embedding_model`` is imported on first use: ``import providers`` stays light."""
    if name == "create_embedding_model":
        from ._embedding_registry import create_embedding_model

        globals()[name] = create_embedding_model
        return create_embedding_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
