"""Built-in providers, one subpackage each (imported only when used), and a registry:
``providers.create("openai:gpt-4o-mini")`` gives a ``ChatModel`` from a string, and
``providers.create_embedding_model("openai:text-embedding-3-small")`` an embedding model."""

from ._embedding_registry import create_embedding_model
from ._registry import create, register

__all__ = ["create", "create_embedding_model", "register"]
