"""A document as a row and back, for the SQL stores: metadata as JSON text, media as its JSON
(the message model's own encoding), the vector as float32 (what sqlite-vec and pgvector hold)."""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .document import Document

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from ..messages import MediaPart

__all__ = ["decode", "encode_media", "encode_metadata", "float32_blob", "vector_text"]


@lru_cache(maxsize=1)
def _media_adapter() -> TypeAdapter[MediaPart]:
    from pydantic import TypeAdapter

    from ..messages import MediaPart

    return TypeAdapter(MediaPart)


def encode_metadata(document: Document) -> str:
    return json.dumps(dict(document.metadata), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode_media(document: Document) -> str | None:
    if document.media is None:
        return None
    return _media_adapter().dump_json(document.media).decode()


def decode(id: str, text: str, metadata: Any, media: Any, score: float) -> Document:
    """A search result from its row; ``metadata``/``media`` as JSON text or already parsed (jsonb)."""
    meta = json.loads(metadata) if isinstance(metadata, str) else metadata
    part = None
    if media is not None:
        adapter = _media_adapter()
        part = adapter.validate_json(media) if isinstance(media, str) else adapter.validate_python(media)
    return Document(id, text, meta, part, float(score))


def float32_blob(vector: Sequence[float]) -> bytes:
    """sqlite-vec's binary vector: little-endian float32 (the machine's order on every platform it ships)."""
    return array("f", vector).tobytes()


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text input, ``[1,2,3]``: no client-side type adapter needed."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
