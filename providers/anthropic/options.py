"""``AnthropicChatOptions``: the common options plus the Messages API's own."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from pydantic import Field

from providers._extras import ProviderOptions

__all__ = ["AnthropicChatOptions"]


class AnthropicChatOptions(ProviderOptions):
    """Options for :class:`AnthropicChatModel`.

    ``max_tokens`` is required by the API: when unset, 4096 is sent (plus ``thinking_budget``).
    ``frequency_penalty`` and ``presence_penalty`` have no Anthropic equivalent and are not sent.
    ``tool_choice`` maps to ``auto`` / ``any`` (also for ``"required"``) / ``none`` / a tool name.
    """

    thinking_budget: int | None = Field(default=None, ge=1024)
    """Extended thinking: ``thinking: {type: enabled, budget_tokens}``. The thinking blocks come back in
    the reply's message metadata and are replayed in later turns, as the API requires."""
    user_id: str | None = None
    """An opaque end-user id, sent as ``metadata.user_id`` (abuse detection)."""
    cache_system_prompt: bool | None = None
    """Mark the system prompt with ``cache_control: {type: ephemeral}`` (prompt caching)."""
    cache_tools: bool | None = None
    """Mark the last tool definition with ``cache_control``, which caches every tool definition."""
    disable_parallel_tool_use: bool | None = None
    """``tool_choice.disable_parallel_tool_use``: at most one tool call per reply."""
    service_tier: str | None = None
    """``"auto"`` or ``"standard_only"``."""
    anthropic_version: str | None = None
    """The ``anthropic-version`` header; ``2023-06-01`` when unset."""
    anthropic_beta: tuple[str, ...] | None = None
    """Beta features, sent as the ``anthropic-beta`` header."""
