"""``@tool``: turn a typed function or method into a tool without changing the function."""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, overload

from ..errors import ConfigurationError
from .callback import ToolCallback
from .definition import Confirmation, ToolMetadata
from .function import FunctionToolCallback, ToolSpec

__all__ = ["spec_of", "tool", "tool_callbacks_from"]

F = TypeVar("F", bound=Callable[..., Any])

_SPEC_ATTRIBUTE = "__chatclient_tool__"
_class_tools: weakref.WeakKeyDictionary[type, tuple[tuple[str, ToolSpec], ...]] = weakref.WeakKeyDictionary()


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    requires_confirmation: Confirmation = False,
    timeout: float | None = None,
    max_retries: int | None = None,
    idempotent: bool = False,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    requires_confirmation: Confirmation = False,
    timeout: float | None = None,
    max_retries: int | None = None,
    idempotent: bool = False,
) -> F | Callable[[F], F]:
    """Mark a function (sync or ``async def``, plain or a method) as a tool.

    The function is returned unchanged, still directly callable, with a :class:`ToolSpec` attached.
    ``name`` defaults to the function's name and ``description`` to its docstring. The argument
    schema is built from the type hints on first use. Methods become tools of each instance: pass the
    instance to ``tools=``. ``requires_confirmation`` gates each call for a person's decision: ``True``
    (anyone may decide), a role name (``"manager"``: only an approver holding it may), or a predicate
    over the ``DecisionRequest``. ``timeout`` (seconds) abandons a call still running then, and the
    model is told it timed out (it replaces the manager's default ``tool_timeout``; a request's
    ``timeout`` still caps it). ``max_retries`` bounds how often per turn the tool may raise
    ``ToolRetry`` (default: ``ToolCallLimits.max_tool_retries``). ``idempotent=True``: a call a crash
    left "outcome unknown" may run again (see docs/durable.md).
    """

    metadata = ToolMetadata.of(  # checked now: a bad value fails at the decorator, not at the first call
        return_direct=return_direct,
        requires_confirmation=requires_confirmation,
        timeout=timeout,
        max_retries=max_retries,
        idempotent=idempotent,
    )

    def decorate(fn: F) -> F:
        if not inspect.isfunction(fn):
            raise ConfigurationError(
                f"@tool decorates functions and methods, not {fn!r}; "
                "wrap other callables with FunctionToolCallback.builder(name, fn)"
            )
        spec = ToolSpec(
            fn,
            name=name,
            description=description,
            metadata=metadata,
            skip_self=True,
        )
        setattr(fn, _SPEC_ATTRIBUTE, spec)
        return fn

    return decorate if fn is None else decorate(fn)


def spec_of(obj: object) -> ToolSpec | None:
    """The spec ``@tool`` attached to ``obj`` (a function, or a method bound to an instance)."""
    spec = getattr(obj, _SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, ToolSpec) else None


def tool_callbacks_from(obj: object) -> tuple[ToolCallback, ...]:
    """The tools of a ``@tool`` function, a bound ``@tool`` method, or an object with ``@tool`` methods."""
    spec = spec_of(obj)
    if spec is not None:
        if inspect.ismethod(obj):
            return (FunctionToolCallback(spec, obj),)
        if spec.is_method:
            raise ConfigurationError(
                f"Tool {spec.name!r} is a method: pass an instance of its class (or the bound method)"
            )
        return (spec.callback,)
    cls = obj if isinstance(obj, type) else type(obj)
    methods = _tool_methods(cls)
    if methods and obj is not cls:
        return tuple(FunctionToolCallback(spec, getattr(obj, attr)) for attr, spec in methods)
    if methods:
        raise ConfigurationError(f"{cls.__qualname__} is a class: pass an instance of it to use its tools")
    if callable(obj):
        raise ConfigurationError(
            f"{obj!r} is not a tool: decorate it with @tool or wrap it with FunctionToolCallback.builder(name, fn)"
        )
    raise ConfigurationError(
        f"{cls.__qualname__} object is not a tool: it is not a ToolCallback or ToolCallbackProvider "
        "and its class has no @tool methods"
    )


def _tool_methods(cls: type) -> tuple[tuple[str, ToolSpec], ...]:
    """``(attribute, spec)`` of the ``@tool`` methods of ``cls``, in definition order; cached per class."""
    cached = _class_tools.get(cls)
    if cached is None:
        found: dict[str, ToolSpec | None] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                # An override keeps the base's position and replaces its spec (or removes the tool).
                found[attr] = spec_of(getattr(value, "__func__", value))
        cached = tuple((attr, spec) for attr, spec in found.items() if spec is not None)
        _class_tools[cls] = cached
    return cached
