"""``BedrockChatOptions``: the common options; what only a Bedrock model understands goes in
``extra_body={"additionalModelRequestFields": {...}}`` (Claude's ``thinking``, for one)."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from providers._extras import ProviderOptions

__all__ = ["BedrockChatOptions"]


class BedrockChatOptions(ProviderOptions):
    """Options for :class:`~providers.bedrock.BedrockChatModel`: ``max_tokens``, ``temperature``,
    ``top_p`` and ``stop_sequences`` are Converse's ``inferenceConfig``; ``top_k`` is passed to the
    model in ``additionalModelRequestFields``."""
