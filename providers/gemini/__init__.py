"""Google Gemini provider (``generateContent``, on the Gemini API or Vertex AI): ``GeminiChatModel``,
``GeminiChatOptions``, and the two providers.

Importing it loads no Google SDK: requests go over httpx2.
"""

from .model import GeminiChatModel
from .options import GeminiChatOptions
from .provider import GeminiProvider, VertexProvider

__all__ = ["GeminiChatModel", "GeminiChatOptions", "GeminiProvider", "VertexProvider"]
