"""Ollama's native ``/api/chat`` API (local servers and Ollama Cloud), and ``/api/embed``.

For Ollama's OpenAI-compatible ``/v1/chat/completions`` endpoint use ``providers.openai`` with
``base_url="http://localhost:11434/v1"``.
"""

from typing import TYPE_CHECKING

from chatclient._lazy import lazy_exports as _lazy_exports

from .model import OllamaChatModel
from .options import OllamaChatOptions
from .provider import OllamaProvider

if TYPE_CHECKING:
    from .embedding import OllamaEmbeddingModel

__all__ = ["OllamaChatModel", "OllamaChatOptions", "OllamaEmbeddingModel", "OllamaProvider"]

# The embedding model loads with its first use: a chat-only program never imports it.
__getattr__, __dir__ = _lazy_exports(__name__, {".embedding": ["OllamaEmbeddingModel"]})
