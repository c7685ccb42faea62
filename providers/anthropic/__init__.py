"""Anthropic Messages API provider: ``AnthropicChatModel`` and ``AnthropicChatOptions``.

Importing it loads neither the official ``anthropic`` SDK nor any network client.
"""

from .model import AnthropicChatModel
from .options import AnthropicChatOptions
from .provider import AnthropicProvider

__all__ = ["AnthropicChatModel", "AnthropicChatOptions", "AnthropicProvider"]
