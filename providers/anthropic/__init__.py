"""Anthropic Messages API provider: ``AnthropicChatModel`` and ``AnthropicChatOptions``.

Importing it loads neither the official ``anthropic`` SDK nor any network client.
"""

from .model import AnthropicChatModel
from .options import AnthropicChatOptions

__all__ = ["AnthropicChatModel", "AnthropicChatOptions"]
