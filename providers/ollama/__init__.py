"""Ollama's native ``/api/chat`` API (local servers and Ollama Cloud).

For Ollama's OpenAI-compatible ``/v1/chat/completions`` endpoint use ``providers.openai`` with
``base_url="http://localhost:11434/v1"``.
"""

from .model import OllamaChatModel
from .options import OllamaChatOptions
from .provider import OllamaProvider

__all__ = ["OllamaChatModel", "OllamaChatOptions", "OllamaProvider"]
