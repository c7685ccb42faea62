"""What ``ChatClient.create``/``builder`` accept as the model: a ``ChatModel``, or a registry string.

``"openai:gpt-4o-mini"`` is what pydantic-ai and LangChain teach, so the client takes it too and
hands it to the provider registry with the caller's keyword arguments (``base_url=``,
``api_key=``). The registry lives in ``providers``, which ``chatclient`` does not import at module
level: it is reached here, lazily and only for a string, through the same guarded sibling import
the client uses for the tool loop (:class:`~chatclient._layout.own_package`).
"""

from __future__ import annotations

from typing import Any

from ._layout import own_package
from .model import ChatModel

__all__ = ["chat_model_from"]


def chat_model_from(model: object, registry_args: dict[str, Any], caller: str) -> ChatModel:
    """``model`` as a ``ChatModel``; a string is built by the provider registry with ``registry_args``.

    Anything else is a ``TypeError`` that names what was given and what to pass; an unknown
    provider prefix is the registry's ``ConfigurationError``, which lists the known ones.
    """
    if isinstance(model, ChatModel):
        if registry_args:
            names = ", ".join(sorted(registry_args))
            raise TypeError(
                f"{caller}() got keyword arguments ({names}) with a ChatModel: they configure a model built "
                f"from a 'provider:model' string; pass them to {type(model).__name__}(...) instead"
            )
        return model
    if isinstance(model, str):
        with own_package("providers"):
            from providers import _registry

        return _registry.create(model, **registry_args)
    shown = repr(model)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    hint = ""
    if isinstance(model, type) and issubclass(model, ChatModel):
        hint = f" (the class {model.__name__} was given: create an instance, e.g. {model.__name__}('model-name'))"
    raise TypeError(
        f"{caller}() takes a ChatModel or a 'provider:model' string such as 'openai:gpt-4o-mini', "
        f"'anthropic:claude-sonnet-4-5' or 'ollama:qwen3'; got {type(model).__name__} {shown}{hint}"
    )
