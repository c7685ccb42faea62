"""``OllamaChatOptions``: the common options plus what only Ollama's ``/api/chat`` understands."""

# No ``from __future__ import annotations`` in this module: pydantic compiles a field's annotation
# string when its class is defined; annotations Python evaluates itself cost less at import.

from pydantic import JsonValue

from providers._extras import ProviderOptions

__all__ = ["OllamaChatOptions"]


class OllamaChatOptions(ProviderOptions):
    """Options for :class:`~providers.ollama.OllamaChatModel`.

    The common fields go into Ollama's ``options`` object (``max_tokens`` becomes ``num_predict``,
    ``stop_sequences`` becomes ``stop``). Precedence inside ``options``, lowest first: the free-form
    ``options`` dict, then the common fields, then the typed fields below (so ``num_predict`` beats
    ``max_tokens`` when both are set).
    """

    keep_alive: str | int | float | None = None
    """How long the model stays loaded after the request: ``"5m"``, seconds, ``0`` unloads, ``-1`` keeps."""
    think: bool | str | None = None
    """Thinking models: ``True``/``False``, or a level (``"low"``, ``"medium"``, ``"high"``) where supported."""
    format: str | dict[str, JsonValue] | None = None
    """``"json"`` for JSON mode or a JSON schema; ``output_schema`` (native structured output) wins."""
    num_ctx: int | None = None
    """Context window size in tokens (Ollama's default is small; raise it for long conversations)."""
    seed: int | None = None
    repeat_penalty: float | None = None
    num_predict: int | None = None
    """Maximum tokens to generate; the Ollama name of ``max_tokens``, and it wins over it."""
    options: dict[str, JsonValue] | None = None
    """Any other entry of Ollama's ``options`` object (``mirostat``, ``num_gpu``, ``min_p``...)."""
