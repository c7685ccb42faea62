"""What a model returns: ``ChatResponse`` → ``Generation`` → ``AssistantMessage``, plus usage."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from enum import Enum
from html import escape
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ._display import Code, clip, html_code, md_code
from ._readonly import ReadOnlyDict
from ._trusted import trusted
from .messages import AssistantMessage, ToolCall

__all__ = [
    "ChatResponse",
    "ChatResponseMetadata",
    "FinishReason",
    "Generation",
    "GenerationMetadata",
    "Usage",
    "shared_generation_metadata",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class FinishReason(str, Enum):
    """Why a generation ended, in one vocabulary for every provider.

    Providers map their own reasons onto these and keep the raw value in
    ``GenerationMetadata.extra["raw_finish_reason"]``.
    """

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    RETURN_DIRECT = "return_direct"
    """The loop ended because every tool of the last batch is ``return_direct``."""
    TOOL_CALL_LIMIT = "tool_call_limit"
    """The loop ended because a per-turn tool-call limit was reached."""
    AWAITING_DECISION = "awaiting_decision"
    """The turn paused: the reply's tool calls wait for a person's decision (``awaiting_decision``)."""
    OTHER = "other"


class Usage(BaseModel):
    """Token counts. ``+`` adds two usages (the tool loop sums its rounds)."""

    model_config = _FROZEN
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        # Sums of ints are ints: nothing to validate (the tool loop adds one usage per round).
        return trusted(
            Usage,
            {
                "prompt_tokens": self.prompt_tokens + other.prompt_tokens,
                "completion_tokens": self.completion_tokens + other.completion_tokens,
                "cache_read_tokens": self.cache_read_tokens + other.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens + other.cache_write_tokens,
                "reasoning_tokens": self.reasoning_tokens + other.reasoning_tokens,
            },
        )


class GenerationMetadata(BaseModel):
    model_config = _FROZEN
    finish_reason: FinishReason | None = None
    extra: dict[str, JsonValue] = Field(default_factory=dict)


_SHARED_METADATA: dict[tuple[FinishReason | None, str], GenerationMetadata] = {}


def shared_generation_metadata(finish_reason: FinishReason | None, raw_finish_reason: str) -> GenerationMetadata:
    """One frozen ``GenerationMetadata(finish_reason, extra={"raw_finish_reason": raw})`` per pair,
    shared by every reply that has it (its ``extra`` is read-only): a model and two dicts fewer per
    reply. For a provider's known raw reasons only (the table stays as small as its vocabulary)."""
    key = (finish_reason, raw_finish_reason)
    shared = _SHARED_METADATA.get(key)
    if shared is None:
        extra = ReadOnlyDict(raw_finish_reason=raw_finish_reason)
        shared = _SHARED_METADATA[key] = trusted(GenerationMetadata, {"finish_reason": finish_reason, "extra": extra})
    return shared


class Generation(BaseModel):
    """One candidate reply."""

    model_config = _FROZEN
    output: AssistantMessage
    metadata: GenerationMetadata = Field(default_factory=GenerationMetadata)  # built on first use, not at import

    def __init__(self, output: AssistantMessage, metadata: GenerationMetadata | None = None) -> None:
        super().__init__(output=output, metadata=metadata or GenerationMetadata())

    @property
    def finish_reason(self) -> FinishReason | None:
        return self.metadata.finish_reason


class ChatResponseMetadata(BaseModel):
    """Response-level facts: the provider's response id, the model that answered, usage.

    ``extra`` holds anything else (rate-limit headers, advisor markers); values must be JSON.
    """

    model_config = _FROZEN
    id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    extra: dict[str, JsonValue] = Field(default_factory=dict)


class ChatResponse(BaseModel):
    """A model reply. In a stream, each chunk is a ``ChatResponse`` holding a delta."""

    model_config = _FROZEN
    generations: tuple[Generation, ...]
    metadata: ChatResponseMetadata = Field(default_factory=ChatResponseMetadata)

    def __init__(
        self,
        generations: tuple[Generation, ...] | list[Generation],
        metadata: ChatResponseMetadata | None = None,
    ) -> None:
        super().__init__(generations=tuple(generations), metadata=metadata or ChatResponseMetadata())

    def __repr__(self) -> str:
        return _repr(self)

    def _repr_markdown_(self) -> str:
        """A notebook shows the text, then the model, finish reason, tokens and calls in one line."""
        return _markdown(self)

    def _repr_html_(self) -> str:
        """As the markdown, escaped: model text is shown as text, never as HTML."""
        return _html(self)

    @classmethod
    def of(
        cls,
        output: AssistantMessage | str,
        *,
        finish_reason: FinishReason | None = None,
        usage: Usage | None = None,
        id: str | None = None,
        model: str | None = None,
    ) -> "ChatResponse":
        """One generation; the common shape of a reply."""
        message = AssistantMessage(output) if isinstance(output, str) else output
        return cls(
            (Generation(message, GenerationMetadata(finish_reason=finish_reason)),),
            ChatResponseMetadata(id=id, model=model, usage=usage),
        )

    @property
    def result(self) -> Generation | None:
        """The first generation, or ``None`` when the reply has none."""
        return self.generations[0] if self.generations else None

    @property
    def text(self) -> str | None:
        """Text of the first generation."""
        return self.generations[0].output.text if self.generations else None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls of the first generation that has any."""
        for generation in self.generations:
            if generation.output.tool_calls:
                return generation.output.tool_calls
        return ()

    @property
    def has_tool_calls(self) -> bool:
        for generation in self.generations:  # noqa: SIM110 - read every round: no generator
            if generation.output.tool_calls:
                return True
        return False

    @property
    def usage(self) -> Usage:
        return self.metadata.usage or Usage()

    def with_metadata(self, **updates: Any) -> "ChatResponse":
        """A copy whose response metadata has ``updates`` applied (values are not re-validated)."""
        metadata = trusted(ChatResponseMetadata, {**self.metadata.__dict__, **updates})
        return trusted(ChatResponse, {"generations": self.generations, "metadata": metadata})


# ---------------------------------------------------------------------------- rendering


def _repr(response: ChatResponse) -> str:
    finish = [g.finish_reason.value if g.finish_reason else None for g in response.generations]
    usage = response.metadata.usage
    tokens = f", tokens={usage.total_tokens}" if usage is not None else ""
    return f"ChatResponse(text={clip(response.text)!r}, finish={finish}{tokens})"


def _facts(response: ChatResponse, code: Code) -> list[str]:
    meta = response.metadata
    facts = [f"model {code(meta.model)}"] if meta.model else []
    finish = ", ".join(g.finish_reason.value for g in response.generations if g.finish_reason)
    if finish:
        facts.append(f"finish {code(finish)}")
    if meta.usage is not None:
        facts.append(f"{meta.usage.prompt_tokens} in / {meta.usage.completion_tokens} out tokens")
    calls = [c for g in response.generations for c in g.output.tool_calls]
    if calls:
        facts.append("calls " + ", ".join(code(c.name) for c in calls))
    return facts


def _markdown(response: ChatResponse) -> str:
    facts = _facts(response, md_code)
    footer = f"\n\n*{' · '.join(facts)}*" if facts else ""
    return (response.text or "*(no text)*") + footer


def _html(response: ChatResponse) -> str:
    facts = _facts(response, html_code)
    text = escape(response.text) if response.text else "<em>(no text)</em>"
    footer = f'<div style="opacity:0.7;font-size:smaller">{" · ".join(facts)}</div>' if facts else ""
    return f'<div class="chatclient-response"><div style="white-space:pre-wrap">{text}</div>{footer}</div>'
