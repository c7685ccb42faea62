"""OpenAI Chat Completions, and every OpenAI-compatible server (Ollama ``/v1``, vLLM, LM Studio,
Groq, DeepSeek, Azure OpenAI) through ``base_url``; and their ``/embeddings``."""

from typing import TYPE_CHECKING

from chatclient._lazy import lazy_exports as _lazy_exports

from .model import OpenAIChatModel
from .options import OpenAIChatOptions
from .provider import OpenAIProvider

if TYPE_CHECKING:
    from .embedding import OpenAIEmbeddingModel

__all__ = ["OpenAIChatModel", "OpenAIChatOptions", "OpenAIEmbeddingModel", "OpenAIProvider"]

# The embedding model loads with its first use: a chat-only program never imports it.
__getattr__, __dir__ = _lazy_exports(__name__, {".embedding": ["OpenAIEmbeddingModel"]})
