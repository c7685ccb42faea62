"""Tools: define them (``@tool``, ``FunctionToolCallback``, ``ToolCallback``) and run the model's calls
(``ToolCallingManager``)."""

from ._limits import ToolCallLimitPolicy, ToolCallLimits
from ._processor import DefaultToolExceptionProcessor, ToolExceptionProcessor, rethrowing_exception_processor
from .callback import ToolCallback, ToolCallbackProvider
from .decorator import tool, tool_callbacks_from
from .definition import ToolContext, ToolDefinition, ToolMetadata
from .function import FunctionToolCallback, FunctionToolCallbackBuilder, ToolSpec
from .manager import ToolCallingManager, ToolCallingManagerBuilder, ToolExecutionResult
from .resolve import ToolLike, resolve_tools

__all__ = [
    "DefaultToolExceptionProcessor",
    "FunctionToolCallback",
    "FunctionToolCallbackBuilder",
    "ToolCallLimitPolicy",
    "ToolCallLimits",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallingManager",
    "ToolCallingManagerBuilder",
    "ToolContext",
    "ToolDefinition",
    "ToolExceptionProcessor",
    "ToolExecutionResult",
    "ToolLike",
    "ToolMetadata",
    "ToolSpec",
    "resolve_tools",
    "rethrowing_exception_processor",
    "tool",
    "tool_callbacks_from",
]
