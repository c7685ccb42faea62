"""The one error every provider raises for an image or a document its API cannot take in a user message.

A tool result can fall back to a part's text placeholder (the model is told it cannot see it); a
user message cannot: the user meant the model to see it. So the request is refused before it is
sent, naming the provider, the kind of part and what the API does take.
"""

from __future__ import annotations

from chatclient.errors import ConfigurationError
from chatclient.messages import FilePart, ImagePart

__all__ = ["unsupported_media"]


def unsupported_media(provider: str, part: ImagePart | FilePart, takes: str) -> ConfigurationError:
    """``ConfigurationError("<provider> cannot take <kind> in a user message: <takes>")``."""
    return ConfigurationError(f"{provider} cannot take {_kind(part)} in a user message: {takes}")


def _kind(part: ImagePart | FilePart) -> str:
    noun = "an image" if isinstance(part, ImagePart) else "a document"
    of_type = f" of type {part.media_type}" if part.media_type else ""
    if part.url is not None:
        url = part.url if len(part.url) <= 80 else part.url[:77] + "..."
        return f"{noun}{of_type} by URL ({url})"
    return f"{noun}{of_type} as base64 data"
