"""Tools backed by a Python function: ``@tool`` functions and methods, ``FunctionToolCallback.builder``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from typing_extensions import Self

from ..errors import ConfigurationError, ToolError
from ..messages import ToolResult
from ._json_schema import SchemaSignature
from ._results import ResultConverter, convert_result, default_result_converter, tool_execution_error
from ._signature import ToolSignature
from .callback import ToolCallback
from .definition import EMPTY_TOOL_CONTEXT, ToolContext, ToolDefinition, ToolMetadata, check_timeout

__all__ = [
    "FunctionToolCallback",
    "FunctionToolCallbackBuilder",
    "ResultConverter",
    "ToolSpec",
    "default_result_converter",
]


class ToolSpec:
    """A function tool minus the object it is bound to: built once, shared by every callback.

    ``@tool`` attaches one to the function; binding it to an instance is cheap because the schema and
    definition live here and are built on first use.
    """

    __slots__ = (
        "_callback",
        "_definition",
        "description",
        "fn",
        "is_async",
        "metadata",
        "name",
        "result_converter",
        "signature",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        metadata: ToolMetadata | None = None,
        input_type: type[BaseModel] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        result_converter: ResultConverter | None = None,
        skip_self: bool = False,
    ) -> None:
        self.fn = fn
        # ``async def`` functions and methods, and callable objects with an ``async def __call__``.
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        self.name = name or fn.__name__
        doc = inspect.getdoc(fn) if inspect.isroutine(fn) else None
        self.description = description or doc or self.name
        self.metadata = metadata or ToolMetadata()
        self.result_converter = result_converter or default_result_converter
        self.signature: ToolSignature | SchemaSignature
        if input_schema is not None:
            if input_type is not None:
                raise ConfigurationError(f"Tool {self.name!r}: give input_type or input_schema, not both")
            self.signature = SchemaSignature(fn, input_schema)
        else:
            self.signature = ToolSignature(fn, input_type=input_type, skip_self=skip_self)
        self._definition: ToolDefinition | None = None
        self._callback: FunctionToolCallback | None = None

    @property
    def is_method(self) -> bool:
        """True when the function takes ``self``/``cls`` first and needs binding to be called."""
        return self.signature.skips_self

    @property
    def definition(self) -> ToolDefinition:
        if self._definition is None:
            self._definition = ToolDefinition(
                name=self.name, description=self.description, input_schema=self.signature.json_schema
            )
        return self._definition

    @property
    def callback(self) -> FunctionToolCallback:
        """The callback of an unbound function tool, made once so per-request resolution is free."""
        if self._callback is None:
            self._callback = FunctionToolCallback(self)
        return self._callback


class FunctionToolCallback(ToolCallback):
    """A ``ToolCallback`` that validates the model's arguments and calls a Python function.

    Sync functions run directly in ``call`` (``acall`` moves them to a thread); ``async def``
    functions are awaited in ``acall`` (``call`` runs them on an event loop). Exceptions from the
    function become :class:`~chatclient.errors.ToolExecutionError`; a ``ToolError`` the function
    raises on purpose passes through unchanged. What the function returns goes through the spec's
    result converter (``None`` is a success, ``"Done"``), except a ``ToolResult``, which is passed
    through as it is; a result that cannot be converted is the tool's error too, saying that the
    tool ran.
    """

    def __init__(self, spec: ToolSpec, target: Callable[..., Any] | None = None) -> None:
        """``target`` is what is called: ``spec.fn`` itself, or a method bound to an instance."""
        self.spec = spec
        self._target = spec.fn if target is None else target
        self.is_async = spec.is_async

    @staticmethod
    def builder(name: str, fn: Callable[..., Any]) -> FunctionToolCallbackBuilder:
        return FunctionToolCallbackBuilder(name, fn)

    @property
    def definition(self) -> ToolDefinition:
        return self.spec.definition

    @property
    def metadata(self) -> ToolMetadata:
        return self.spec.metadata

    @property
    def name(self) -> str:
        return self.spec.name

    def validate_arguments(self, arguments: str) -> None:
        self.spec.signature.parse(arguments, self.spec.name)

    def call(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        if self.is_async:
            return super().call(arguments, context)
        args, kwargs = self._prepare(arguments, context)
        try:
            value = self._target(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            raise tool_execution_error(self.name, exc) from exc
        return self._converted(value)

    async def acall(self, arguments: str, context: ToolContext | None = None) -> str | ToolResult:
        if not self.is_async:
            return await super().acall(arguments, context)
        args, kwargs = self._prepare(arguments, context)
        try:
            value = await self._target(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            raise tool_execution_error(self.name, exc) from exc
        return self._converted(value)

    def _converted(self, value: Any) -> str | ToolResult:
        converter = self.spec.result_converter
        if type(value) is str and converter is default_result_converter:
            return value  # what the default converter makes of a text: no call chain for the usual result
        return convert_result(self.name, value, converter)

    def _prepare(self, arguments: str, context: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        signature = self.spec.signature
        parsed: Any = signature.parse(arguments, self.spec.name)
        return signature.call_args(parsed, context if context is not None else EMPTY_TOOL_CONTEXT)


class FunctionToolCallbackBuilder:
    """Fluent construction of a :class:`FunctionToolCallback`, as in Spring AI.

    With ``input_type(Model)`` the function takes one ``Model`` argument (plus, optionally, a second
    parameter that receives the ``ToolContext``) and the schema is the model's. With
    ``input_schema(schema)`` (a JSON schema from a catalogue, an MCP server, a config file) the
    function takes the validated arguments as one ``dict`` (plus, optionally, the ``ToolContext``);
    validation needs the ``jsonschema`` extra. Without either the schema comes from the function's
    signature, as for ``@tool``.
    """

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self._name = name
        self._fn = fn
        self._description: str | None = None
        self._input_type: type[BaseModel] | None = None
        self._input_schema: Mapping[str, Any] | None = None
        self._return_direct = False
        self._requires_confirmation = False
        self._result_converter: ResultConverter | None = None
        self._timeout: float | None = None
        self._max_retries: int | None = None

    def description(self, description: str) -> Self:
        self._description = description
        return self

    def input_type(self, input_type: type[BaseModel]) -> Self:
        self._input_type = input_type
        return self

    def input_schema(self, schema: Mapping[str, Any]) -> Self:
        """The arguments' JSON schema, sent as it is and checked before every call."""
        self._input_schema = schema
        return self

    def return_direct(self, return_direct: bool = True) -> Self:
        self._return_direct = return_direct
        return self

    def requires_confirmation(self, requires_confirmation: bool = True) -> Self:
        self._requires_confirmation = requires_confirmation
        return self

    def timeout(self, seconds: float | None) -> Self:
        """Seconds a call may run before it is abandoned and the model told so (see ``@tool``)."""
        check_timeout(seconds)
        self._timeout = seconds
        return self

    def max_retries(self, retries: int | None) -> Self:
        """How often per turn the tool may raise ``ToolRetry`` (see ``@tool``)."""
        self._max_retries = retries
        return self

    def result_converter(self, converter: ResultConverter) -> Self:
        self._result_converter = converter
        return self

    def build(self) -> FunctionToolCallback:
        spec = ToolSpec(
            self._fn,
            name=self._name,
            description=self._description,
            metadata=ToolMetadata.of(
                return_direct=self._return_direct,
                requires_confirmation=self._requires_confirmation,
                timeout=self._timeout,
                max_retries=self._max_retries,
            ),
            input_type=self._input_type,
            input_schema=self._input_schema,
            result_converter=self._result_converter,
        )
        return FunctionToolCallback(spec)
