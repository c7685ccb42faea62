"""``OpenAIChatOptions``: the common options plus what only Chat Completions understands."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from typing import Literal

from pydantic import JsonValue

from providers._extras import ProviderOptions

__all__ = ["OpenAIChatOptions"]


class OpenAIChatOptions(ProviderOptions):
    """Options of ``POST /chat/completions``. Unset fields are not sent.

    ``max_tokens`` (common) is sent as ``max_completion_tokens`` to OpenAI and Azure OpenAI (reasoning
    models reject ``max_tokens``) and as ``max_tokens`` to other OpenAI-compatible servers, which do
    not all know the newer name. ``top_k`` is sent to compatible servers only (OpenAI rejects it).
    """

    seed: int | None = None
    response_format: dict[str, JsonValue] | None = None
    """Sent as is (e.g. ``{"type": "json_object"}``) unless ``output_schema`` is set, which wins."""
    output_schema_name: str | None = None
    """``response_format.json_schema.name``; default: the schema's ``title``, else ``"output"``."""
    strict_output_schema: bool | None = None
    """``json_schema.strict``. When true, ``additionalProperties: false`` is added to every object of
    the schema (OpenAI requires it); every property must then also be required."""
    strict_tools: bool | None = None
    """``function.strict`` on every tool, with the same schema adjustment as ``strict_output_schema``."""
    parallel_tool_calls: bool | None = None
    """Sent only when the request has tools (OpenAI rejects it otherwise)."""
    reasoning_effort: str | None = None
    """``"minimal"``, ``"low"``, ``"medium"``, ``"high"`` ... for reasoning models."""
    user: str | None = None
    logit_bias: dict[str, int] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    n: int | None = None
    """Number of choices; each becomes one ``Generation``."""
    max_completion_tokens: int | None = None
    """Sent under this name whatever the server; wins over ``max_tokens``."""
    service_tier: str | None = None
    store: bool | None = None
    metadata: dict[str, str] | None = None
    stream_include_usage: bool = True
    """Ask for the final usage chunk when streaming (``stream_options.include_usage``)."""
    tool_call_content: Literal["empty", "null", "omit"] = "empty"
    """How an assistant message with tool calls and no text carries ``content``: ``""`` (the default,
    which every server we checked accepts: OpenAI, Ollama, llama.cpp, DeepSeek, Mistral, OpenRouter),
    ``null``, or no ``content`` key (for a server that rejects ``""``)."""
