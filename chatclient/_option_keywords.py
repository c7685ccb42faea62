"""``.options(temperature=0.2)``: options given as keywords, checked against the model's own options class.

A user should not need to know a provider's options class to change a temperature. The keywords
become an instance of the class the model's defaults use (so provider fields such as OpenAI's
``reasoning_effort`` are accepted where the model has them), and a key that class lacks is a
``TypeError`` listing the valid ones, with the nearest match first (``temprature`` ->
``temperature``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .options import ChatOptions, ToolCallingChatOptions

__all__ = ["options_from_keywords"]

_NOT_KEYWORDS = {"tool_callbacks": "give tools with .tools(...) or default_tools(...)"}
"""Fields that are not set as option keywords, and what to use instead."""


def options_class_of(defaults: ChatOptions | None) -> type[ChatOptions]:
    """The options class of a model with these defaults (a model without defaults takes the common tool-calling one)."""
    return type(defaults) if defaults is not None else ToolCallingChatOptions


def options_from_keywords(options_class: type[ChatOptions], keywords: Mapping[str, Any], caller: str) -> ChatOptions:
    """``options_class(**keywords)``, with an unknown key reported against the class's own fields."""
    valid = sorted(name for name in options_class.model_fields if name not in _NOT_KEYWORDS)
    for key in keywords:
        if key in _NOT_KEYWORDS:
            raise TypeError(f"{caller}() does not take {key!r} as an option: {_NOT_KEYWORDS[key]}")
        if key not in options_class.model_fields:
            import difflib

            near = difflib.get_close_matches(key, valid, n=1)
            suggestion = f" Did you mean {near[0]!r}?" if near else ""
            raise TypeError(
                f"{caller}() got an unknown option {key!r} for {options_class.__name__}.{suggestion} "
                f"Valid options: {', '.join(valid)}"
            )
    return options_class(**keywords)
