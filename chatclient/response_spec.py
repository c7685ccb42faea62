"""What ``call()``, ``stream()``, ``acall()`` and ``astream()`` return: lazy terminals.

Each terminal method builds the request and runs the chain anew, so calling two terminals runs the
model twice; keep the ``ChatClientResponse`` if you need several views of one reply.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from ._chain import compose_acall, compose_astream, compose_call, compose_stream
from .advisor import Advisor, ChatClientRequest, ChatClientResponse, ContextKeys
from .errors import StructuredOutputError
from .model import ChatModel
from .responses import ChatResponse

__all__ = [
    "AsyncCallResponseSpec",
    "AsyncStreamResponseSpec",
    "CallResponseSpec",
    "StreamResponseSpec",
]

T = TypeVar("T")
_Build = Callable[[Mapping[str, Any] | None], tuple[ChatClientRequest, list[Advisor]]]

_FORMAT = """Your response should be in JSON format.
Do not include any explanations, only provide a RFC8259 compliant JSON response following this format \
without deviation.
Do not include markdown code blocks in your response.
Here is the JSON Schema instance your output must adhere to:
```{schema}```"""

_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@functools.lru_cache(maxsize=256)
def _adapter(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)


def _entity_context(type_: Any, native: bool) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    adapter = _adapter(type_)
    schema = adapter.json_schema()
    context: dict[str, Any] = {ContextKeys.OUTPUT_FORMAT: _FORMAT.format(schema=json.dumps(schema))}
    if native:
        context[ContextKeys.OUTPUT_SCHEMA] = schema
    return adapter, context


def _parse(adapter: TypeAdapter[T], response: ChatClientResponse) -> T:
    chat = response.chat_response
    text = chat.text if chat is not None else None
    if not text or not text.strip():
        raise StructuredOutputError("The model returned no text to convert", text)
    match = _FENCE.match(text)
    cleaned = match.group(1) if match else text.strip()
    try:
        return adapter.validate_json(cleaned)
    except ValidationError as exc:
        raise StructuredOutputError(
            f"The model's reply does not match the requested type: {exc.error_count()} error(s): "
            + "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()),
            text,
        ) from exc


class CallResponseSpec:
    """Terminals of ``call()``."""

    __slots__ = ("_build", "_model")

    def __init__(self, model: ChatModel, build: _Build) -> None:
        self._model = model
        self._build = build

    def chat_client_response(self) -> ChatClientResponse:
        return self._run(None)

    def chat_response(self) -> ChatResponse | None:
        return self._run(None).chat_response

    def content(self) -> str | None:
        """The text of the reply, or ``None`` when it has none (e.g. a paused tool call)."""
        chat = self._run(None).chat_response
        return chat.text if chat is not None else None

    @overload
    def entity(self, type_: type[T], *, native: bool = False) -> T: ...
    @overload
    def entity(self, type_: Any, *, native: bool = False) -> Any: ...

    def entity(self, type_: Any, *, native: bool = False) -> Any:
        """The reply converted to ``type_`` (a pydantic model, ``list[Model]``, a TypedDict...).

        The JSON schema goes to the model as instructions on the last user message, or, with
        ``native=True`` and a provider that supports it, through the provider's own structured
        output. Raises :class:`StructuredOutputError` (with the raw text) when it does not parse.
        """
        adapter, context = _entity_context(type_, native)
        return _parse(adapter, self._run(context))

    def _run(self, context: Mapping[str, Any] | None) -> ChatClientResponse:
        request, advisors = self._build(context)
        return compose_call(advisors, self._model)(request)


class AsyncCallResponseSpec:
    """Terminals of ``acall()``: the same names as ``call()``, awaited."""

    __slots__ = ("_build", "_model")

    def __init__(self, model: ChatModel, build: _Build) -> None:
        self._model = model
        self._build = build

    async def chat_client_response(self) -> ChatClientResponse:
        return await self._run(None)

    async def chat_response(self) -> ChatResponse | None:
        return (await self._run(None)).chat_response

    async def content(self) -> str | None:
        chat = (await self._run(None)).chat_response
        return chat.text if chat is not None else None

    @overload
    async def entity(self, type_: type[T], *, native: bool = False) -> T: ...
    @overload
    async def entity(self, type_: Any, *, native: bool = False) -> Any: ...

    async def entity(self, type_: Any, *, native: bool = False) -> Any:
        adapter, context = _entity_context(type_, native)
        return _parse(adapter, await self._run(context))

    async def _run(self, context: Mapping[str, Any] | None) -> ChatClientResponse:
        request, advisors = self._build(context)
        return await compose_acall(advisors, self._model)(request)


class StreamResponseSpec:
    """Terminals of ``stream()``: iterators that run the chain as they are consumed."""

    __slots__ = ("_build", "_model")

    def __init__(self, model: ChatModel, build: _Build) -> None:
        self._model = model
        self._build = build

    def chat_client_response(self) -> Iterator[ChatClientResponse]:
        request, advisors = self._build(None)
        yield from compose_stream(advisors, self._model)(request)

    def chat_response(self) -> Iterator[ChatResponse]:
        for chunk in self.chat_client_response():
            if chunk.chat_response is not None:
                yield chunk.chat_response

    def content(self) -> Iterator[str]:
        """Text deltas as they arrive (empty deltas are skipped)."""
        for chunk in self.chat_client_response():
            chat = chunk.chat_response
            if chat is not None and chat.generations:
                text = chat.generations[0].output.text
                if text:
                    yield text


class AsyncStreamResponseSpec:
    """Terminals of ``astream()``: async iterators with the names of ``stream()``."""

    __slots__ = ("_build", "_model")

    def __init__(self, model: ChatModel, build: _Build) -> None:
        self._model = model
        self._build = build

    async def chat_client_response(self) -> AsyncIterator[ChatClientResponse]:
        request, advisors = self._build(None)
        async for chunk in compose_astream(advisors, self._model)(request):
            yield chunk

    async def chat_response(self) -> AsyncIterator[ChatResponse]:
        async for chunk in self.chat_client_response():
            if chunk.chat_response is not None:
                yield chunk.chat_response

    async def content(self) -> AsyncIterator[str]:
        async for chunk in self.chat_client_response():
            chat = chunk.chat_response
            if chat is not None and chat.generations:
                text = chat.generations[0].output.text
                if text:
                    yield text
