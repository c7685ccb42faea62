"""What the model is told when a tool call fails, or whether the failure is raised instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from ..errors import ToolError

__all__ = ["DefaultToolExceptionProcessor", "ToolExceptionProcessor", "rethrowing_exception_processor"]

ToolExceptionProcessor: TypeAlias = Callable[[ToolError], str]
"""Returns the text the model sees for a failed call, or raises to abort the request."""


class DefaultToolExceptionProcessor:
    """Tells the model what went wrong, so it can correct itself, except for chosen failures.

    ``rethrow`` lists exception types that abort the request instead: a ``ToolError`` of a listed type
    is raised as it is, and so is the original exception (``__cause__``) of a tool that raised one of
    them. ``always=True`` raises every error.
    """

    __slots__ = ("always", "rethrow")

    def __init__(self, rethrow: tuple[type[BaseException], ...] = (), always: bool = False) -> None:
        self.rethrow = rethrow
        self.always = always

    def __call__(self, error: ToolError) -> str:
        if self.always or isinstance(error, self.rethrow):
            raise error
        cause = error.__cause__
        if cause is not None and isinstance(cause, self.rethrow):
            raise cause
        return str(error)

    def __repr__(self) -> str:
        return f"DefaultToolExceptionProcessor(rethrow={self.rethrow!r}, always={self.always!r})"


rethrowing_exception_processor = DefaultToolExceptionProcessor(always=True)
"""Raises every tool failure instead of reporting it to the model."""
