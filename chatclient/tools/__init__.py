"""Tools: define them (``@tool``, ``FunctionToolCallback``, ``ToolCallback``), return text or a
``ToolResult`` of parts, run the model's calls (``ToolCallingManager`` and its limits), gate them
(confirmation policies, decisions) and keep a paused state safe (stores, ``seal``/``unseal``, the
nonce ledger)."""

import os as _os
import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

# The pending stores moved to chatclient.pending; their old module paths (chatclient.tools.pending,
# .pending_sqlite, ...) are thin modules in _old_paths that warn and hand over the new module.
__path__.append(_os.path.join(_os.path.dirname(__file__), "_old_paths"))

if _typing.TYPE_CHECKING:
    from ..messages import FilePart, ImagePart, JsonPart, TextPart, ToolResult, ToolResultPart
    from ..pending.state import (
        AsyncInMemoryNonceLedger,
        AsyncInMemoryPendingToolCallStore,
        InMemoryNonceLedger,
        InMemoryPendingToolCallStore,
        NonceLedger,
        PendingToolCallStore,
        SqlitePendingToolCallStore,
        StoredPendingToolCalls,
        default_nonce_ledger,
        seal,
        unseal,
    )
    from ._limits import ToolCallLimitPolicy, ToolCallLimits
    from ._pool import ToolPoolExhaustedError
    from ._processor import DefaultToolExceptionProcessor, ToolExceptionProcessor, rethrowing_exception_processor
    from ._retry import ToolRetriesExceededError, ToolRetry
    from .approval import Approver, DecisionRequest, ToolCallAuthorizer
    from .callback import ToolCallback, ToolCallbackProvider
    from .confirmation import (
        DEFAULT_DENY_MESSAGE,
        ConfirmationSettings,
        DecisionCompleteness,
        PendingCall,
        PendingToolCalls,
        ToolCallConfirmationPolicy,
        ToolCallConfirmationRequired,
        ToolCallDecision,
        ToolCallDecisions,
        UnmatchedToolNameWarning,
        awaiting_decision,
    )
    from .decorator import tool, tool_callbacks_from
    from .definition import ToolContext, ToolDefinition, ToolMetadata
    from .function import FunctionToolCallback, FunctionToolCallbackBuilder, ToolSpec
    from .manager import ToolCallingManager, ToolCallingManagerBuilder, ToolExecutionResult
    from .resolve import ToolLike, resolve_tools
    from .rules import ApprovalHandler, ApprovalRule

__all__ = [
    "ApprovalHandler",
    "ApprovalRule",
    "Approver",
    "AsyncInMemoryNonceLedger",
    "AsyncInMemoryPendingToolCallStore",
    "DecisionRequest",
    "StoredPendingToolCalls",
    "ToolCallAuthorizer",
    "awaiting_decision",
    "ConfirmationSettings",
    "DecisionCompleteness",
    "default_nonce_ledger",
    "DEFAULT_DENY_MESSAGE",
    "DefaultToolExceptionProcessor",
    "FilePart",
    "FunctionToolCallback",
    "FunctionToolCallbackBuilder",
    "ImagePart",
    "InMemoryNonceLedger",
    "InMemoryPendingToolCallStore",
    "JsonPart",
    "NonceLedger",
    "PendingCall",
    "PendingToolCalls",
    "PendingToolCallStore",
    "resolve_tools",
    "rethrowing_exception_processor",
    "seal",
    "SqlitePendingToolCallStore",
    "TextPart",
    "tool",
    "tool_callbacks_from",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallConfirmationPolicy",
    "ToolCallConfirmationRequired",
    "ToolCallDecision",
    "ToolCallDecisions",
    "ToolCallingManager",
    "ToolCallingManagerBuilder",
    "ToolCallLimitPolicy",
    "ToolCallLimits",
    "ToolContext",
    "ToolDefinition",
    "ToolExceptionProcessor",
    "ToolExecutionResult",
    "ToolLike",
    "ToolMetadata",
    "ToolPoolExhaustedError",
    "ToolResult",
    "ToolResultPart",
    "ToolRetriesExceededError",
    "ToolRetry",
    "ToolSpec",
    "UnmatchedToolNameWarning",
    "unseal",
]

# Loaded on first use: a plain call never pays for the tool machinery (decorator, manager, stores).
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "._pool": ["ToolPoolExhaustedError"],
        "._retry": ["ToolRetriesExceededError", "ToolRetry"],
        "..messages": ["FilePart", "ImagePart", "JsonPart", "TextPart", "ToolResult", "ToolResultPart"],
        "._limits": ["ToolCallLimitPolicy", "ToolCallLimits"],
        "._processor": ["DefaultToolExceptionProcessor", "ToolExceptionProcessor", "rethrowing_exception_processor"],
        ".approval": ["Approver", "DecisionRequest", "ToolCallAuthorizer"],
        ".callback": ["ToolCallback", "ToolCallbackProvider"],
        ".confirmation": [
            "DEFAULT_DENY_MESSAGE",
            "ConfirmationSettings",
            "DecisionCompleteness",
            "PendingCall",
            "PendingToolCalls",
            "ToolCallConfirmationPolicy",
            "ToolCallConfirmationRequired",
            "ToolCallDecision",
            "ToolCallDecisions",
            "UnmatchedToolNameWarning",
            "awaiting_decision",
        ],
        ".decorator": ["tool", "tool_callbacks_from"],
        ".definition": ["ToolContext", "ToolDefinition", "ToolMetadata"],
        ".function": ["FunctionToolCallback", "FunctionToolCallbackBuilder", "ToolSpec"],
        ".manager": ["ToolCallingManager", "ToolCallingManagerBuilder", "ToolExecutionResult"],
        "..pending.state": [
            "AsyncInMemoryNonceLedger",
            "AsyncInMemoryPendingToolCallStore",
            "InMemoryNonceLedger",
            "InMemoryPendingToolCallStore",
            "NonceLedger",
            "PendingToolCallStore",
            "SqlitePendingToolCallStore",
            "StoredPendingToolCalls",
            "default_nonce_ledger",
            "seal",
            "unseal",
        ],
        ".resolve": ["ToolLike", "resolve_tools"],
        ".rules": ["ApprovalHandler", "ApprovalRule"],
    },
)
