"""A wire API, declared: what a provider supplies (its name, its path, and the pure functions that
build a request body and read a reply, a stream and an error body); the shell does the rest."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import httpx2

from chatclient.options import ChatOptions
from chatclient.prompt import Prompt
from chatclient.responses import ChatResponse

from ._errors import ErrorDetails

if TYPE_CHECKING:
    from chatclient.events import ModelEvent

__all__ = ["BuildRequest", "ParseResponse", "StreamDecoder", "WireMapping"]


class BuildRequest(Protocol):
    def __call__(self, prompt: Prompt, options: ChatOptions, *, stream: bool) -> dict[str, Any]: ...


class ParseResponse(Protocol):
    def __call__(self, data: Any, headers: httpx2.Headers) -> ChatResponse: ...


class StreamDecoder(Protocol):
    """Turns one streamed reply's events into model events, keeping state across them."""

    def feed(self, event: Any) -> Iterable[ModelEvent]:
        """One event: ``(name, data)`` for SSE, the parsed line for NDJSON, a chunk for ``bytes``."""
        ...

    def finish(self, saw_done: bool = False) -> None:
        """The stream ended (``saw_done``: an SSE ``[DONE]`` came); raise ``StreamIncompleteError``
        if it ended before the API's terminal event."""
        ...


class WireMapping(NamedTuple):
    """A wire API, declared: what a provider supplies; the shell does the rest."""

    provider: str
    """The name in errors and logs (``ProviderError.provider``)."""
    path: str
    """Appended to the base URL (``"/chat/completions"``)."""
    build_request: BuildRequest
    """``(prompt, options, stream=)`` → the request body (pure; ``extra_body`` is merged in after)."""
    parse_response: ParseResponse
    """``(json, headers)`` of a complete reply → the response."""
    error_details: Callable[[Any], ErrorDetails | None]
    """What an error body says (message, type, code); the status table does the classing."""
    stream_decoder: Callable[[httpx2.Headers], StreamDecoder]
    """A fresh decoder for one streamed reply, given its response headers."""
    framing: Literal["sse", "ndjson", "bytes"] = "sse"
    """How a stream is framed: SSE, NDJSON, or ``bytes`` (the decoder is fed the body's raw chunks
    and does its own framing: Bedrock's binary event stream)."""
    accept: str | None = "application/json"
    """The ``accept`` header sent with every request (``None``: none)."""
