"""``GeminiChatOptions``: the common options plus the ``generateContent`` API's own."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from typing import Literal

from pydantic import Field

from providers._extras import ProviderOptions

__all__ = ["GeminiChatOptions"]


class GeminiChatOptions(ProviderOptions):
    """Options for :class:`GeminiChatModel`.

    ``max_tokens`` is ``generationConfig.maxOutputTokens`` (thinking tokens count towards it);
    ``tool_choice`` maps to ``functionCallingConfig`` mode ``AUTO`` / ``ANY`` (``"required"``) /
    ``NONE``, or ``ANY`` limited to the named function.
    """

    thinking_budget: int | None = Field(default=None, ge=-1)
    """``thinkingConfig.thinkingBudget``: tokens the model may think (``0`` off where the model allows,
    ``-1`` the model decides). Gemini 2.5."""
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    """``thinkingConfig.thinkingLevel`` (Gemini 3)."""
    include_thoughts: bool | None = None
    """``thinkingConfig.includeThoughts``: the thought summaries come back as reasoning (streamed as
    ``ReasoningDelta``) and ride in the message metadata with the parts' signatures."""
    seed: int | None = None
    """``generationConfig.seed``."""
    safety_settings: tuple[dict[str, str], ...] | None = None
    """``safetySettings``: ``{"category": "HARM_CATEGORY_…", "threshold": "BLOCK_…"}`` entries."""
    cached_content: str | None = None
    """``cachedContent``: a context cache's name (``cachedContents/…``)."""
    labels: dict[str, str] | None = None
    """``labels`` (Vertex AI only: billing labels)."""
