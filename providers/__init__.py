"""Built-in providers, one subpackage each (imported only when used), and a registry:
``providers.create("openai:gpt-4o-mini")`` gives a ``ChatModel`` from a string."""

from ._registry import create, register

__all__ = ["create", "register"]
