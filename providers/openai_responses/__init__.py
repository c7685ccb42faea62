"""OpenAI Responses API provider (``POST /v1/responses``), stateless by default."""

from ._mapping import ITEM_IDS_KEY, REASONING_KEY
from .model import OpenAIResponsesChatModel
from .options import OpenAIResponsesChatOptions

__all__ = ["ITEM_IDS_KEY", "REASONING_KEY", "OpenAIResponsesChatModel", "OpenAIResponsesChatOptions"]
# Its provider is OpenAI's: ``providers.openai.OpenAIProvider``.
