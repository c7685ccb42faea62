"""Argument augmentation: extra fields in every tool's schema (say, ``inner_thought``) that the model
fills, a consumer receives, and the tool never sees.

:class:`ArgumentAugmentation` is a loop extension. ``do_before_call`` wraps each tool the round offers
in an :class:`AugmentedToolCallback` (the tool's own schema plus the fields of a pydantic model of the
user's choice, which come first, so the model writes its reasoning before the arguments);
``do_after_call`` hands the model's values for every call of the reply to the consumer — a paused
call's too, before anyone decides; the wrapper strips them before the tool runs. The tool's metadata
(``return_direct``, ``requires_confirmation``) and its ``ToolContext`` parameters are the wrapped
tool's own, unchanged. A paused call's arguments in the pending state still hold the values, so the
person deciding sees them (``augmentation.values_of(pending.calls[0])``).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from chatclient.advisor import ChatClientRequest, ChatClientResponse
from chatclient.errors import ConfigurationError, ToolArgumentsError
from chatclient.messages import ToolCall, ToolResult
from chatclient.options import ToolCallingChatOptions
from chatclient.tools.callback import ToolCallback
from chatclient.tools.confirmation import PendingCall
from chatclient.tools.definition import ToolContext, ToolDefinition, ToolMetadata

from .tool_calling import LoopState, ToolLoopExtension

__all__ = ["ArgumentAugmentation", "AugmentedCall", "AugmentedToolCallback"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class AugmentedCall(Generic[M]):
    """What the consumer receives: the call as the model made it, and its augmented values."""

    call: ToolCall
    values: M
    round: int
    turn_id: str


def _fields_schema(model: type[BaseModel]) -> tuple[dict[str, Any], list[str], frozenset[str]]:
    schema = model.model_json_schema(by_alias=True)
    properties: dict[str, Any] = {
        name: {k: v for k, v in prop.items() if k != "title"} for name, prop in schema.get("properties", {}).items()
    }
    if "$defs" in schema:
        raise ConfigurationError(f"Augmentation model {model.__name__} must have flat fields (no nested models)")
    return properties, list(schema.get("required", [])), frozenset(properties)


def _split(arguments: str, keys: frozenset[str]) -> tuple[dict[str, Any], str] | None:
    """(augmented values, the tool's own arguments as JSON), or ``None`` when not a JSON object."""
    stripped = arguments.strip()
    try:
        parsed = json.loads(stripped) if stripped and stripped != "null" else {}
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    values = {k: parsed.pop(k) for k in list(parsed) if k in keys}
    return values, json.dumps(parsed, ensure_ascii=False)


class AugmentedToolCallback(ToolCallback):
    """A tool with extra argument fields: checked, then stripped before the wrapped tool runs."""

    def __init__(self, delegate: ToolCallback, model: type[BaseModel]) -> None:
        self.delegate = delegate
        self.model = model
        self.is_async = delegate.is_async
        properties, required, self._keys = _fields_schema(model)
        own = delegate.definition
        own_properties = own.input_schema.get("properties")
        own_properties = own_properties if isinstance(own_properties, dict) else {}
        clash = sorted(self._keys & set(own_properties))
        if clash:
            raise ConfigurationError(
                f"Tool {own.name!r} already has argument(s) {clash}: rename the augmentation fields"
            )
        own_required = own.input_schema.get("required")
        schema = {
            **own.input_schema,
            "properties": {**properties, **own_properties},
            "required": [*required, *(own_required if isinstance(own_required, list) else [])],
        }
        self._definition = ToolDefinition(name=own.name, description=own.description, input_schema=schema)

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    @property
    def metadata(self) -> ToolMetadata:
        return self.delegate.metadata

    @property
    def name(self) -> str:
        return self.delegate.name

    def values(self, arguments: str) -> BaseModel:
        """The augmented values of ``arguments``; ``ToolArgumentsError`` when they do not validate."""
        split = _split(arguments, self._keys)
        try:
            return self.model.model_validate(split[0] if split is not None else {})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
            message = f"Invalid arguments for tool '{self.name}': {problems}"
            raise ToolArgumentsError(message, tool_name=self.name) from exc

    def strip(self, arguments: str) -> str:
        """The wrapped tool's own arguments: checked augmented fields removed."""
        self.values(arguments)
        split = _split(arguments, self._keys)
        return arguments if split is None else split[1]

    def validate_arguments(self, arguments: str) -> None:
        self.delegate.validate_arguments(self.strip(arguments))

    def call(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        return self.delegate.call(self.strip(arguments), context)

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        return await self.delegate.acall(self.strip(arguments), context)


class ArgumentAugmentation(ToolLoopExtension, Generic[M]):
    """Adds ``model``'s fields to every offered tool and hands the model's values to ``consumer``.

    Register it like any extension: ``ChatClient.builder(m).default_tool_loop_extensions(aug)``, or
    ``ToolSearchToolCallingAdvisor(extensions=[aug])`` to augment the tools search found.
    """

    def __init__(self, model: type[M], consumer: Callable[[AugmentedCall[M]], Any] | None = None) -> None:
        _fields_schema(model)  # a model that cannot augment is refused now
        self.model = model
        self.consumer = consumer
        self._wrapped: weakref.WeakKeyDictionary[ToolCallback, AugmentedToolCallback] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def wrap(self, callback: ToolCallback) -> AugmentedToolCallback:
        """The augmented form of ``callback``, made once per tool."""
        if isinstance(callback, AugmentedToolCallback):
            return callback
        wrapped = self._wrapped.get(callback)
        if wrapped is None:
            wrapped = AugmentedToolCallback(callback, self.model)
            with self._lock:
                self._wrapped[callback] = wrapped
        return wrapped

    def values_of(self, call: ToolCall | PendingCall) -> M | None:
        """The augmented values of a call (a pending one too), or ``None`` when they are missing or invalid."""
        split = _split(call.arguments, _fields_schema(self.model)[2])
        if split is None:
            return None
        try:
            return self.model.model_validate(split[0])
        except ValidationError:
            return None

    def do_before_call(self, request: ChatClientRequest, state: LoopState) -> ChatClientRequest:
        options = request.prompt.options
        if not isinstance(options, ToolCallingChatOptions) or not options.tool_callbacks:
            return request
        wrapped = tuple(self.wrap(callback) for callback in options.tool_callbacks)
        return request.with_prompt(request.prompt.with_options(options.model_copy(update={"tool_callbacks": wrapped})))

    def do_after_call(self, response: ChatClientResponse, state: LoopState) -> ChatClientResponse:
        chat = response.chat_response
        consumer = self.consumer
        if consumer is None or chat is None:
            return response
        for call in chat.tool_calls:
            values = self.values_of(call)
            if values is not None:
                consumer(AugmentedCall(call, values, state.round, state.turn_id))
        return response
