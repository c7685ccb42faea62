"""From a Python signature to a tool's JSON schema, and from the model's JSON back to a call.

A pydantic model is built from the parameters once per function, on first use, and shared by every
call: it writes the schema the model sees and parses, validates and coerces the arguments in one pass.
Building it lazily lets annotations name classes defined later in the module.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import ErrorDetails

from ..errors import ConfigurationError, ToolArgumentsError
from ._results import normalize_arguments
from .definition import ToolContext

__all__ = ["ToolSignature"]

_SELF_NAMES = ("self", "cls")
_MAX_REPORTED_ERRORS = 8
_MAX_INPUT_REPR = 40
_ARGUMENTS_CONFIG = ConfigDict(extra="forbid", protected_namespaces=())


class _SchemaGenerator(GenerateJsonSchema):
    """Leaves out the titles pydantic derives from names: noise in every tool definition."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@dataclass(frozen=True)
class _Param:
    name: str
    positional: bool
    """Positional-only parameters are passed by position, all others by keyword."""
    source: Literal["field", "context", "model"]
    """Where the value comes from: a field of the arguments model, the ``ToolContext``, or the whole
    model (``input_type`` tools)."""
    field: str = ""


@dataclass(frozen=True)
class _Compiled:
    model: type[BaseModel]
    schema: dict[str, Any]
    params: tuple[_Param, ...]
    keywords: tuple[tuple[str, str], ...] | None = None
    """(parameter name, its field) pairs when every parameter is a field passed by keyword (the usual
    tool): its call's keywords are then one dict comprehension, not a loop over the parameters (half
    the instructions of ``dict(zip(names, map(...), strict=True))``, whose lengths agree by making)."""

    @staticmethod
    def of(model: type[BaseModel], schema: dict[str, Any], params: tuple[_Param, ...]) -> _Compiled:
        plain = all(p.source == "field" and not p.positional for p in params)
        keywords = tuple((p.name, p.field) for p in params) if plain else None
        return _Compiled(model, schema, params, keywords)


class ToolSignature:
    """How one Python callable maps to JSON arguments.

    With ``input_type`` the callable takes ``(input[, context])`` and the schema is the model's;
    otherwise every parameter becomes a property, except ``self``/``cls`` (when ``skip_self``) and a
    parameter annotated ``ToolContext``, which is injected.
    """

    __slots__ = ("_compiled", "_fn", "_input_type", "_localns", "_parameters", "skips_self")

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        input_type: type[BaseModel] | None = None,
        skip_self: bool = False,
    ) -> None:
        label = getattr(fn, "__qualname__", repr(fn))
        try:
            parameters = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"Cannot read the signature of tool function {label}: {exc}") from exc
        variadic = [p.name for p in parameters if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if variadic:
            raise ConfigurationError(
                f"Tool function {label} has variadic parameters ({', '.join(variadic)}); "
                "a tool needs named parameters the model can fill"
            )
        self.skips_self = skip_self and bool(parameters) and parameters[0].name in _SELF_NAMES
        if self.skips_self:
            parameters = parameters[1:]
        if input_type is not None and not 1 <= len(parameters) <= 2:
            raise ConfigurationError(
                f"Tool function {label} must take (input) or (input, context) with input_type "
                f"{input_type.__name__}; it takes {len(parameters)} parameters"
            )
        self._fn = fn
        self._input_type = input_type
        self._parameters = tuple(parameters)
        self._compiled: _Compiled | None = None
        self._localns = _defining_locals()

    @property
    def json_schema(self) -> dict[str, Any]:
        return self._compile().schema

    def parse(self, arguments: str, tool_name: str) -> BaseModel:
        """Parse and validate the model's raw JSON; blank or ``null`` means no arguments."""
        validator = self._compile().model.__pydantic_validator__  # itself: ``model_validate_json`` is a frame more
        try:
            parsed: BaseModel = validator.validate_json(normalize_arguments(arguments))
        except ValidationError as exc:
            raise ToolArgumentsError(_describe(exc, tool_name), tool_name=tool_name) from exc
        return parsed

    def call_args(self, parsed: BaseModel, context: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        compiled = self._compile()
        values = parsed.__dict__
        keywords = compiled.keywords
        if keywords is not None:
            return [], {name: values[field] for name, field in keywords}
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param in compiled.params:
            if param.source == "field":
                value = values[param.field]
            elif param.source == "context":
                value = context
            else:
                value = parsed
            if param.positional:
                args.append(value)
            else:
                kwargs[param.name] = value
        return args, kwargs

    def _compile(self) -> _Compiled:
        # Racing threads may both compile; the results are equal, so no lock is needed.
        if self._compiled is None:
            input_type = self._input_type
            self._compiled = self._compile_signature() if input_type is None else self._compile_input_type(input_type)
        return self._compiled

    def _compile_input_type(self, input_type: type[BaseModel]) -> _Compiled:
        sources: tuple[Literal["model", "context"], ...] = ("model", "context")
        params = tuple(
            _Param(p.name, p.kind == p.POSITIONAL_ONLY, source)
            for p, source in zip(self._parameters, sources, strict=False)
        )
        return _Compiled.of(input_type, _build_schema(input_type, self._fn), params)

    def _compile_signature(self) -> _Compiled:
        annotations = self._annotations()
        params: list[_Param] = []
        fields: dict[str, Any] = {}
        for param in self._parameters:
            annotation = annotations.get(param.name, Any)
            positional = param.kind == param.POSITIONAL_ONLY
            if _is_context(annotation):
                params.append(_Param(param.name, positional, "context"))
                continue
            # Fields get neutral names and the parameter's name as alias, so parameters called
            # ``json``, ``copy``, ``model_config`` or ``_private`` cannot clash with BaseModel.
            field = f"p{len(fields)}"
            default = param.default
            if isinstance(default, FieldInfo):  # ``x: int = Field(description=...)``
                annotation, default = Annotated[annotation, default], param.empty
            info = Field(alias=param.name) if default is param.empty else Field(default, alias=param.name)
            fields[field] = (annotation, info)
            params.append(_Param(param.name, positional, "field", field))
        name = f"{getattr(self._fn, '__name__', 'tool')}_arguments"
        try:
            model = create_model(name, __config__=_ARGUMENTS_CONFIG, **fields)
        except (PydanticUserError, TypeError) as exc:
            raise _schema_error(self._fn, exc) from exc
        return _Compiled.of(model, _build_schema(model, self._fn), tuple(params))

    def _annotations(self) -> dict[str, Any]:
        # String annotations (``from __future__ import annotations``) are evaluated in the module's
        # globals and, for a tool defined inside a function, in that function's locals as they were
        # when the tool was made: a name imported or defined there resolves too.
        try:
            signature = inspect.signature(self._fn, eval_str=True, locals=self._localns)
        except NameError as exc:
            raise _schema_error(self._fn, exc) from exc
        return {p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty}


def _defining_locals() -> dict[str, Any] | None:
    """The locals of the nearest calling frame outside chatclient, when it is a function's."""
    frame = sys._getframe(2)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("chatclient."):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def _build_schema(model: type[BaseModel], fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        schema = model.model_json_schema(schema_generator=_SchemaGenerator)
    except PydanticUserError as exc:
        raise _schema_error(fn, exc) from exc
    schema.pop("title", None)  # the model's class name: noise, like the field titles
    # Extra keys are still rejected when the arguments are validated; saying so in every tool
    # definition costs tokens each round. Providers add it back where strict mode needs it.
    schema.pop("additionalProperties", None)
    return schema


def _schema_error(fn: Callable[..., Any], exc: Exception) -> ConfigurationError:
    label = getattr(fn, "__qualname__", repr(fn))
    return ConfigurationError(f"Cannot build the argument schema of tool function {label}: {exc}")


def _is_context(annotation: Any) -> bool:
    """``ToolContext`` (or a subclass), possibly optional."""
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_context(arg) for arg in get_args(annotation) if arg is not type(None))
    return isinstance(annotation, type) and issubclass(annotation, ToolContext)


def _describe(exc: ValidationError, tool_name: str) -> str:
    """A compact, readable account of what was wrong: this text is what the model sees."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if first["type"] == "json_invalid":
        detail = first.get("ctx", {}).get("error", first["msg"])
        return (
            f"The arguments for tool '{tool_name}' are not valid JSON ({detail}). "
            "Send the arguments as one JSON object."
        )
    parts = [_describe_error(error) for error in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
    return f"Invalid arguments for tool '{tool_name}': {'; '.join(parts)}"


def _describe_error(error: ErrorDetails) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    if not path:
        if error["type"] in ("model_type", "dict_type"):
            return "the arguments must be a JSON object"
        return f"arguments: {error['msg']}"
    message = f"{path.lstrip('.')}: {error['msg']}"
    value = error.get("input")
    if error["type"] != "missing" and isinstance(value, (str, int, float, bool)):
        shown = repr(value)
        if len(shown) > _MAX_INPUT_REPR:
            shown = shown[: _MAX_INPUT_REPR - 3] + "..."
        message += f" (got {shown})"
    return message
