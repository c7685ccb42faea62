"""Ollama's native ``/api/chat`` API (local servers and Ollama Cloud).

For Ollama's OpenAI-compatible ``/v1/chat/completions`` endpoint use ``providers.openai`` with
``base_url="http://localhost:11434/v1"``.
"""

from .options import OllamaChatOptions
from .model import OllamaChatModel

__all__ = ["OllamaChatModel", "OllamaChatOptions"]
