"""Provider features the typed options do not name: ``extra_body`` and ``extra_headers``.

Every provider's options class derives from :class:`ProviderOptions`, so both fields exist on every
provider, per model (the model's ``options=``) and per request (``spec.options(...)``), with one
merge rule:

- request over model: ``extra_body`` is **deep-merged** (objects merge key by key, the request's
  value wins; any other value, a list included, is replaced whole); ``extra_headers`` merge by
  name, case-insensitively, the request's value winning;
- into the request: ``extra_body`` is deep-merged into the body the mapping built, last, by the same
  rule (so ``{"temperature": 0}`` replaces the typed value and ``{"thinking": {"display": ...}}``
  adds a key to the typed object); ``extra_headers`` are sent on top of the provider's own headers.
"""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from collections.abc import Mapping
from typing import Any

from chatclient.options import ChatOptions, ToolCallingChatOptions

__all__ = ["ProviderOptions", "apply_extra_body", "deep_merge", "extra_headers"]


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: nested objects merged key by key, every other value replaced."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = deep_merge(below, value)
        else:
            merged[key] = value
    return merged


def _merge_headers(base: Mapping[str, str], over: Mapping[str, str]) -> dict[str, str]:
    merged = {key.lower(): value for key, value in base.items()}
    merged.update((key.lower(), value) for key, value in over.items())
    return merged


class ProviderOptions(ToolCallingChatOptions):
    """The options every provider shares beyond the common ones: raw body fields and headers."""

    extra_body: dict[str, Any] | None = None
    """Deep-merged into the request body last: fields the typed options do not model (vLLM's
    ``chat_template_kwargs``, Ollama's ``think``, a new API parameter ...)."""
    extra_headers: dict[str, str] | None = None
    """Sent with the request on top of the provider's own (a beta flag, a gateway's routing header).
    Credential headers among them are masked in a repr like the provider's own."""

    def merged_over(self, defaults: ChatOptions | None) -> ChatOptions:
        """As the base merge, except that ``extra_body`` deep-merges and ``extra_headers`` merge by
        name, these options winning, so a request's extras add to the model's instead of replacing them."""
        merged = super().merged_over(defaults)
        if not isinstance(defaults, ProviderOptions):
            return merged
        update: dict[str, Any] = {}
        if defaults.extra_body and self.extra_body and "extra_body" in self.model_fields_set:
            update["extra_body"] = deep_merge(defaults.extra_body, self.extra_body)
        if defaults.extra_headers and self.extra_headers and "extra_headers" in self.model_fields_set:
            update["extra_headers"] = _merge_headers(defaults.extra_headers, self.extra_headers)
        return merged.model_copy(update=update) if update else merged


def apply_extra_body(body: dict[str, Any], options: ChatOptions) -> dict[str, Any]:
    """``body`` with the options' ``extra_body`` deep-merged into it (``body`` itself when there is none)."""
    extra = getattr(options, "extra_body", None)
    return deep_merge(body, extra) if extra else body


def extra_headers(options: ChatOptions) -> dict[str, str] | None:
    """The options' extra headers, or ``None``."""
    headers = getattr(options, "extra_headers", None)
    return dict(headers) if headers else None
