"""Options of the OpenAI Responses API beyond the common ones."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from typing import Any

from providers._extras import ProviderOptions

__all__ = ["OpenAIResponsesChatOptions"]


class OpenAIResponsesChatOptions(ProviderOptions):
    """Typed extras of ``POST /responses``; ``max_tokens`` is sent as ``max_output_tokens``.

    ``top_k`` and ``stop_sequences`` have no Responses equivalent and are not sent.
    """

    store: bool | None = None
    """``None``/``False``: stateless (the default here, unlike the API's): the whole conversation is
    sent each time and reasoning items travel back as ``encrypted_content``. ``True`` lets OpenAI keep
    the response; item ids are then sent with the replayed items."""
    reasoning_effort: str | None = None
    """``"none"``, ``"minimal"``, ``"low"``, ``"medium"``, ``"high"``... (``reasoning.effort``)."""
    reasoning_summary: str | None = None
    """``"auto"``, ``"concise"`` or ``"detailed"`` (``reasoning.summary``)."""
    include: tuple[str, ...] | None = None
    """Extra output to include; ``"reasoning.encrypted_content"`` is added automatically when the
    request is stateless and uses a reasoning model."""
    parallel_tool_calls: bool | None = None
    truncation: str | None = None
    """``"auto"`` or ``"disabled"``."""
    user: str | None = None
    service_tier: str | None = None
    verbosity: str | None = None
    """``text.verbosity``: ``"low"``, ``"medium"`` or ``"high"``."""
    builtin_tools: tuple[dict[str, Any], ...] | None = None
    """The API's built-in tools, sent after the function tools as they are given:
    ``{"type": "web_search"}``, ``{"type": "file_search", "vector_store_ids": [...]}``,
    ``{"type": "code_interpreter", "container": {"type": "auto"}}`` ... OpenAI runs them; their output
    items (``web_search_call``, ``file_search_call``, ``code_interpreter_call`` ...) are kept in the
    message metadata (``openai_responses.builtin_items``) and sent back with the assistant turn."""
    strict_tools: bool | None = None
    """``strict`` of every function tool (``False`` when unset: the API's default is strict, which
    rejects schemas with optional parameters)."""
