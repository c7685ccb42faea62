"""Request options: frozen models with builders, merged field by field (set fields win)."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from typing_extensions import Self

from ._redact import redact_mapping, redact_text
from .tools.callback import ToolCallback

if TYPE_CHECKING:
    from .tools.resolve import ToolLike

__all__ = [
    "ChatOptions",
    "ChatOptionsBuilder",
    "ToolCallingChatOptions",
    "ToolCallingChatOptionsBuilder",
]

OptionsT = TypeVar("OptionsT", bound="ChatOptions")


class ChatOptions(BaseModel):
    """Options every provider understands. Providers subclass it with their own fields.

    Only fields that were *set* take part in a merge, so ``ChatOptions(temperature=None)`` clears a
    default while ``ChatOptions()`` leaves it alone.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    output_schema: dict[str, JsonValue] | None = None
    """JSON schema for the provider's native structured output, set by ``entity(..., native=True)``."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one model round may take, retries and their waits included (not sent to the model).
    Carried on the options so that it reaches the provider with the prompt in every mode; the
    provider's ``RetryPolicy.deadline``, when shorter, still applies. ``APITimeoutError`` when hit."""

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """Pydantic's fields as its repr (and ``str``, and a pretty-printer) shows them, but with
        credentials masked: a provider's ``extra_headers`` may carry an ``Authorization`` or
        ``api-key``, an ``extra_body`` or a tool context a token (:mod:`chatclient._redact`)."""
        for name, value in super().__repr_args__():
            if isinstance(value, Mapping):
                yield name, redact_mapping(value)
            elif isinstance(value, str):
                yield name, redact_text(value)
            else:
                yield name, value

    @classmethod
    def builder(cls) -> "ChatOptionsBuilder[Self]":
        return ChatOptionsBuilder(cls)

    def mutate(self) -> "ChatOptionsBuilder[Self]":
        """A builder seeded with the fields set on these options."""
        return ChatOptionsBuilder(type(self), self._set_values())

    def _set_values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}

    def merged_over(self, defaults: "ChatOptions | None") -> "ChatOptions":
        """These options on top of ``defaults``: fields set here win, the rest come from ``defaults``.

        The result has the more specific of the two types, so provider options survive a merge
        with common ones.
        """
        if defaults is None:
            return self
        if isinstance(self, type(defaults)) and defaults.model_fields_set <= self.model_fields_set:
            return self  # every default is overridden here already (the client merged them): no copy
        target: type[ChatOptions] = type(self)
        if not isinstance(self, type(defaults)) and isinstance(defaults, type(self)):
            target = type(defaults)
        fields = target.model_fields
        values = {k: v for k, v in defaults._set_values().items() if k in fields}
        values.update((k, v) for k, v in self._set_values().items() if k in fields)
        return target(**values)


class ToolCallingChatOptions(ChatOptions):
    """Options plus the tools of this request and the context handed to them.

    ``tool_callbacks`` and ``tool_context`` are live objects: they are never serialized and never
    sent to the model as such (providers send each tool's definition).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True)
    tool_callbacks: tuple[ToolCallback, ...] = Field(default=(), exclude=True)
    tool_context: dict[str, Any] = Field(default_factory=dict, exclude=True)
    tool_choice: str | None = None
    """``"auto"``, ``"none"``, ``"required"`` or a tool name; the loop sets ``"none"`` for its last
    round after a limit is hit."""

    @classmethod
    def builder(cls) -> "ToolCallingChatOptionsBuilder[Self]":
        return ToolCallingChatOptionsBuilder(cls)

    def mutate(self) -> "ToolCallingChatOptionsBuilder[Self]":
        return ToolCallingChatOptionsBuilder(type(self), self._set_values())

    def merged_over(self, defaults: ChatOptions | None) -> ChatOptions:
        """As :meth:`ChatOptions.merged_over`, except that ``tool_context`` merges by key (these
        options' keys win), so a default context is not lost to a request's."""
        merged = super().merged_over(defaults)
        if merged is self and not isinstance(defaults, ToolCallingChatOptions):
            return merged
        if (
            isinstance(defaults, ToolCallingChatOptions)
            and "tool_context" in defaults.model_fields_set
            and "tool_context" in self.model_fields_set
            and defaults.tool_context
        ):
            context = {**defaults.tool_context, **self.tool_context}
            if context != merged.tool_context:  # type: ignore[attr-defined]
                merged = merged.model_copy(update={"tool_context": context})
        return merged

    def tool_callback(self, name: str) -> ToolCallback | None:
        for callback in self.tool_callbacks:
            if callback.name == name:
                return callback
        return None


class ChatOptionsBuilder(Generic[OptionsT]):
    """Fluent construction of options, as in Spring AI. ``set`` covers provider-specific fields."""

    def __init__(self, cls: type[OptionsT], values: Mapping[str, Any] | None = None) -> None:
        self._cls = cls
        self._values: dict[str, Any] = dict(values or {})

    def set(self, name: str, value: Any) -> Self:
        if name not in self._cls.model_fields:
            raise AttributeError(f"{self._cls.__name__} has no option {name!r}")
        self._values[name] = value
        return self

    def model(self, model: str | None) -> Self:
        return self.set("model", model)

    def temperature(self, temperature: float | None) -> Self:
        return self.set("temperature", temperature)

    def max_tokens(self, max_tokens: int | None) -> Self:
        return self.set("max_tokens", max_tokens)

    def top_p(self, top_p: float | None) -> Self:
        return self.set("top_p", top_p)

    def top_k(self, top_k: int | None) -> Self:
        return self.set("top_k", top_k)

    def stop_sequences(self, *stop: str) -> Self:
        return self.set("stop_sequences", stop)

    def frequency_penalty(self, penalty: float | None) -> Self:
        return self.set("frequency_penalty", penalty)

    def presence_penalty(self, penalty: float | None) -> Self:
        return self.set("presence_penalty", penalty)

    def output_schema(self, schema: dict[str, JsonValue] | None) -> Self:
        return self.set("output_schema", schema)

    def timeout(self, seconds: float | None) -> Self:
        return self.set("timeout", seconds)

    def build(self) -> OptionsT:
        return self._cls(**self._values)


class ToolCallingChatOptionsBuilder(ChatOptionsBuilder[OptionsT]):
    def tool_callbacks(self, *tools: "ToolLike") -> Self:
        """Tools in any accepted form: callbacks, ``@tool`` functions, objects with ``@tool`` methods,
        providers, or sequences of these."""
        from .tools.resolve import resolve_tools

        return self.set("tool_callbacks", resolve_tools(tools))

    def tool_context(self, context: Mapping[str, Any]) -> Self:
        return self.set("tool_context", dict(context))

    def tool_choice(self, choice: str | None) -> Self:
        return self.set("tool_choice", choice)
