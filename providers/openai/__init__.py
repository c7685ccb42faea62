"""OpenAI Chat Completions, and every OpenAI-compatible server (Ollama ``/v1``, vLLM, LM Studio,
Groq, DeepSeek, Azure OpenAI) through ``base_url``."""

from .model import OpenAIChatModel
from .options import OpenAIChatOptions
from .provider import OpenAIProvider

__all__ = ["OpenAIChatModel", "OpenAIChatOptions", "OpenAIProvider"]
