"""The unit a store holds and a search returns: text, flat metadata, optional media and, on a
search result, its score.

Metadata values are flat scalars (``str``, ``int``, ``float``, ``bool`` or ``None``): that is what the
portable filter expression compares, and what every store can index the same way (a JSON column, a
hash field). A nested value is refused when the document is made, not when a store rejects it later.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Union

from .._readonly import ReadOnlyDict
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..messages import MediaPart

__all__ = ["Document", "MetadataValue", "check_metadata"]

MetadataValue = Union[str, int, float, bool, None]  # noqa: UP007  (a runtime alias on Python 3.10)
_SCALARS = (str, int, float, bool, type(None))


def check_metadata(metadata: Mapping[str, object]) -> ReadOnlyDict:
    """``metadata`` as a read-only dict, or a clear error naming the first key that is not flat."""
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise ConfigurationError(f"Document metadata keys must be strings, got {key!r}")
        if not isinstance(value, _SCALARS):
            raise ConfigurationError(
                f"Document metadata value for {key!r} must be a str, int, float, bool or None, got "
                f"{type(value).__name__}: flatten it (e.g. 'author_name') so every store can filter on it"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigurationError(f"Document metadata value for {key!r} must be finite, got {value}")
    return metadata if isinstance(metadata, ReadOnlyDict) else ReadOnlyDict(metadata)


@dataclass(frozen=True, slots=True)
class Document:
    """A piece of content for retrieval. ``id`` is the store's key (adding a document with an id the
    store holds replaces it); ``score`` is set on search results only: the cosine similarity to the
    query, from -1 to 1, higher is closer."""

    id: str
    text: str
    metadata: Mapping[str, MetadataValue] = field(default_factory=ReadOnlyDict)
    media: MediaPart | None = None
    score: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ConfigurationError(f"A document id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.text, str):
            raise ConfigurationError(f"Document text must be a string, got {type(self.text).__name__}")
        object.__setattr__(self, "metadata", check_metadata(self.metadata))

    @classmethod
    def of(
        cls, text: str, metadata: Mapping[str, MetadataValue] | None = None, *, media: MediaPart | None = None
    ) -> Document:
        """A document with a random id (a UUID4), for content that has no natural key."""
        return cls(str(uuid.uuid4()), text, metadata if metadata is not None else {}, media)

    def with_score(self, score: float) -> Document:
        """This document as a search result."""
        return replace(self, score=score)
