"""Messages of a conversation: frozen pydantic models that round-trip through JSON unchanged.

A conversation is a sequence of :data:`Message` values. The ``role`` field is the discriminator,
so ``TypeAdapter(list[Message]).validate_json(...)`` rebuilds the exact classes.

The constructors take the main field positionally (``UserMessage("hi")``); pydantic also calls
them when validating, so each accepts every field as a keyword.
"""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

import base64
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic_core import to_json
from typing_extensions import Self

__all__ = [
    "AssistantMessage",
    "CallIds",
    "FilePart",
    "ImagePart",
    "JsonPart",
    "MediaPart",
    "Message",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "ToolResult",
    "ToolResultPart",
    "UserMessage",
    "distinct_call_ids",
    "provider_call_ids",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _meta(metadata: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
    return dict(metadata) if metadata else {}


class SystemMessage(BaseModel):
    """Instructions for the model; a provider may send it outside the message list."""

    model_config = _FROZEN
    role: Literal["system"] = "system"
    text: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self, text: str, *, metadata: Mapping[str, JsonValue] | None = None, role: Literal["system"] = "system"
    ) -> None:
        super().__init__(text=text, metadata=_meta(metadata), role=role)


class ToolCall(BaseModel):
    """One call the model asked for.

    ``arguments`` is the raw JSON string exactly as the model produced it: it is parsed and validated
    only when the tool runs, so malformed output is reported to the model instead of lost.
    In a *stream chunk*, a ``ToolCall`` is a fragment: fragments with the same ``id`` are joined by
    concatenating their ``arguments`` (see :class:`chatclient.streaming.ChatResponseAccumulator`).

    ``id`` is unique within its reply (see :class:`CallIds`): decisions, results and pending states
    name a call by it. ``wire_id`` is the id the provider sent when it had to be replaced (repeated,
    or ``""`` for an empty or missing one), kept so the provider gets its own id back; ``None`` when
    ``id`` is the provider's.
    """

    model_config = _FROZEN
    id: str
    type: str = "function"
    name: str = ""
    arguments: str = ""
    # Left out of dumps when None: the stored form of every other call stays as it was, and an older
    # reader (``extra="forbid"``) still loads it.
    wire_id: str | None = Field(default=None, exclude_if=lambda value: value is None)

    @property
    def provider_id(self) -> str:
        """The id to send back to the provider: its own, or ``id`` where it gave none."""
        return self.wire_id or self.id


class CallIds:
    """Gives each call of one reply its own id, in the reply's order, the same way every time.

    A provider id seen for the first time is kept. A repeated one becomes ``<id>#<position>`` and an
    empty or missing one ``call_<position>`` (position counts the reply's calls from 1), with
    ``_<n>`` added while that is taken. Deterministic in the sequence of provider ids alone, so a
    call, a stream (which assigns as calls start) and a stored, resumed reply all agree.
    """

    __slots__ = ("_taken",)

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def assign(self, wire_id: str) -> str:
        """The id of the reply's next call, whose provider id is ``wire_id``."""
        taken = self._taken
        if wire_id and wire_id not in taken:
            taken.add(wire_id)
            return wire_id
        position = len(taken) + 1
        base = f"{wire_id}#{position}" if wire_id else f"call_{position}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        return candidate


_call_id = attrgetter("id")


def distinct_call_ids(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """``calls`` with an id of their own each (see :class:`CallIds`); ``calls`` itself when they have.

    A replaced call keeps the provider's id in ``wire_id``. The common case (distinct, non-empty ids)
    costs one set (none for a single call).
    """
    if len(calls) == 1:
        if calls[0].id:
            return calls  # the usual reply: one call, no set to build
    else:
        ids = set(map(_call_id, calls))  # no comprehension frame: this runs for every reply with calls
        if len(ids) == len(calls) and "" not in ids:
            return calls
    assigner = CallIds()
    distinct = []
    for call in calls:
        wire_id = call.wire_id if call.wire_id is not None else call.id
        own = assigner.assign(call.id)
        if own == call.id:
            distinct.append(call)
        else:
            distinct.append(ToolCall(id=own, type=call.type, name=call.name, arguments=call.arguments, wire_id=wire_id))
    return tuple(distinct)


def provider_call_ids(message: "AssistantMessage") -> dict[str, str]:
    """Own id → the provider's, for the calls of ``message`` whose id was replaced: what a provider's
    mapping sends for their results. Empty for almost every reply."""
    return {call.id: call.wire_id for call in message.tool_calls if call.wire_id}


class AssistantMessage(BaseModel):
    """The model's reply: text, tool calls, or both. Its calls have distinct ids (:class:`CallIds`)."""

    model_config = _FROZEN
    role: Literal["assistant"] = "assistant"
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self,
        text: str | None = None,
        *,
        tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
        metadata: Mapping[str, JsonValue] | None = None,
        role: Literal["assistant"] = "assistant",
    ) -> None:
        calls = tuple(tool_calls)
        if calls:
            try:
                calls = distinct_call_ids(calls)
            except AttributeError:  # validating JSON hands over dicts: a stored reply is checked too
                calls = distinct_call_ids(
                    tuple(c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in calls)
                )
        super().__init__(text=text, tool_calls=calls, metadata=_meta(metadata), role=role)

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


class TextPart(BaseModel):
    """Text for the model to read."""

    model_config = _FROZEN
    type: Literal["text"] = "text"
    text: str

    def __init__(self, text: str, *, type: Literal["text"] = "text") -> None:
        super().__init__(text=text, type=type)

    def as_text(self) -> str:
        return self.text


class JsonPart(BaseModel):
    """A JSON value (a tool's structured output). Sent as JSON text: no provider takes JSON as such."""

    model_config = _FROZEN
    type: Literal["json"] = "json"
    value: JsonValue

    def __init__(self, value: JsonValue, *, type: Literal["json"] = "json") -> None:
        super().__init__(value=value, type=type)

    def as_text(self) -> str:
        return to_json(self.value).decode()


class _Media(BaseModel):
    """Inline base64 ``data`` or a ``url``, exactly one; ``media_type`` is required with ``data``."""

    model_config = _FROZEN
    media_type: str | None = None
    data: str | None = None
    """The content, base64-encoded (standard alphabet, padded), as every provider takes it."""
    url: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.data is None) == (self.url is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of data (base64) or url")
        if self.data is not None and not self.media_type:
            raise ValueError(f"{type(self).__name__} with inline data needs its media_type")
        return self

    @property
    def data_url(self) -> str:
        """``url``, or ``data`` as a ``data:`` URL (what the OpenAI APIs take for inline content)."""
        return self.url if self.url is not None else f"data:{self.media_type};base64,{self.data}"

    def _size(self) -> str:
        if self.data is None:
            return ""
        size = len(self.data) * 3 // 4 - self.data[-2:].count("=")  # decoded size, without decoding
        return f", {size / 1024:.0f} KB" if size >= 1024 else f", {size} bytes"


class ImagePart(_Media):
    """An image: base64 ``data`` with its ``media_type`` (``image/png``, ``image/jpeg``, ...) or a ``url``."""

    type: Literal["image"] = "image"

    @model_validator(mode="after")
    def _an_image(self) -> Self:
        if self.media_type is not None and not self.media_type.startswith("image/"):
            raise ValueError(f"ImagePart media_type must be image/*, not {self.media_type!r}")
        return self

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> "ImagePart":
        return cls(data=base64.b64encode(data).decode("ascii"), media_type=media_type)

    def as_text(self) -> str:
        if self.url is not None:
            return f"[image: {self.url}]"
        return f"[image: {self.media_type}{self._size()}]"


class FilePart(_Media):
    """A document or other file (``application/pdf``, ``text/plain``, ...): base64 ``data`` or a ``url``."""

    type: Literal["file"] = "file"
    filename: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, filename: str | None = None) -> "FilePart":
        return cls(data=base64.b64encode(data).decode("ascii"), media_type=media_type, filename=filename)

    def as_text(self) -> str:
        name = self.filename or self.url
        kind = f"{self.media_type}{self._size()}" if self.media_type else self._size().removeprefix(", ")
        if name and kind:
            return f"[file {name}: {kind}]"
        return f"[file {name}]" if name else f"[file: {kind}]"


MediaPart = Annotated[Union[ImagePart, FilePart], Field(discriminator="type")]  # noqa: UP007
"""An image or a document a user message carries besides its text (a discriminated union on ``type``)."""


class UserMessage(BaseModel):
    """What the user said, with any images and documents (``media``) sent with it.

    A new ``UserMessage`` starts a new *turn* (tool-call limits count per turn).
    ``UserMessage("What is in this picture?", media=[ImagePart.from_bytes(png, "image/png")])``: the
    parts are the ones tool results use; each provider sends them as its API documents, and raises
    ``ConfigurationError`` before any request for a kind its API cannot take.
    """

    model_config = _FROZEN
    role: Literal["user"] = "user"
    text: str
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    media: tuple[MediaPart, ...] = ()

    def __init__(
        self,
        text: str,
        *,
        media: Sequence[MediaPart] = (),
        metadata: Mapping[str, JsonValue] | None = None,
        role: Literal["user"] = "user",
    ) -> None:
        super().__init__(text=text, media=tuple(media), metadata=_meta(metadata), role=role)


ToolResultPart = Annotated[
    Union[TextPart, JsonPart, ImagePart, FilePart],  # noqa: UP007
    Field(discriminator="type"),
]
"""One piece of a structured tool result (a discriminated union on ``type``)."""


def _parts(parts: Sequence[ToolResultPart | str] | str) -> tuple[ToolResultPart, ...]:
    if isinstance(parts, str):
        return (TextPart(parts),)
    return tuple(TextPart(part) if isinstance(part, str) else part for part in parts)


def _text_form(parts: Sequence[ToolResultPart]) -> str:
    return "\n".join(part.as_text() for part in parts)


class ToolResult(BaseModel):
    """What a tool may return instead of a ``str``: content parts (text, JSON, images, files) and metadata.

    Each provider sends the parts in its own wire format and, where its API cannot carry a kind (an
    image in a Chat Completions tool message), that part's text form (:meth:`text`) with a note.
    ``metadata`` is kept with the tool response for the application and never sent to the model.
    ``is_error`` is the tool's own report of a failure (an MCP tool's ``isError``): the model is told,
    as for a tool that raised, but the exception processor is not involved.

    ``ToolResult(["Two charts:", ImagePart.from_bytes(png, "image/png")])``; a ``str`` part is a
    ``TextPart``.
    """

    model_config = _FROZEN
    parts: tuple[ToolResultPart, ...] = ()
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    is_error: bool = False

    def __init__(
        self,
        parts: Sequence[ToolResultPart | str] | str = (),
        *,
        metadata: Mapping[str, JsonValue] | None = None,
        is_error: bool = False,
    ) -> None:
        super().__init__(parts=_parts(parts), metadata=_meta(metadata), is_error=is_error)

    @property
    def text(self) -> str:
        """The text form: each part's text, one per line (an image or a file as a short placeholder)."""
        return _text_form(self.parts)


class ToolResponse(BaseModel):
    """The result of one tool call, sent back to the model under the call's ``id``.

    ``response_data`` is always the result as text: what every provider can send. A tool that returned
    a :class:`ToolResult` also leaves its ``parts`` here (``response_data`` is then their text form), so
    a provider that takes images or files sends those, and its ``metadata`` as ``result_metadata``.
    ``metadata`` is the loop's own record (a confirmation decision, who approved it): kept apart so a
    tool cannot write it. ``is_error`` marks results that report a failure (bad arguments, unknown
    tool, a tool that raised) so providers that support it (Anthropic's ``is_error``) can say so, and
    advisors can tell.
    """

    model_config = _FROZEN
    id: str
    name: str
    response_data: str
    is_error: bool = False
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    parts: tuple[ToolResultPart, ...] = ()
    """The structured content, when the tool returned a ``ToolResult``; empty for a text result."""
    result_metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """The ``ToolResult``'s metadata: for the application, never sent to the model."""

    @property
    def content(self) -> tuple[ToolResultPart, ...]:
        """The parts to send: ``parts``, or the text result as one ``TextPart``."""
        return self.parts or (TextPart(self.response_data),)


class ToolResponseMessage(BaseModel):
    """All tool results of one model reply, in the reply's order."""

    model_config = _FROZEN
    role: Literal["tool"] = "tool"
    responses: tuple[ToolResponse, ...]
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(
        self,
        responses: tuple[ToolResponse, ...] | list[ToolResponse],
        *,
        metadata: Mapping[str, JsonValue] | None = None,
        role: Literal["tool"] = "tool",
    ) -> None:
        super().__init__(responses=tuple(responses), metadata=_meta(metadata), role=role)


Message = Annotated[
    Union[SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage],  # noqa: UP007
    Field(discriminator="role"),
]
"""Any message of a conversation (a discriminated union on ``role``)."""
