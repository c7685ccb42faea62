"""chatclient: a fluent LLM client whose tool loop is one advisor in a linear chain.

>>> from chatclient import ChatClient
>>> from chatclient.testing import ScriptedChatModel
>>> ChatClient.create(ScriptedChatModel(["Hi!"])).prompt("Hello").call().content()
'Hi!'

The root holds what an application uses: the client, messages, options and responses, tools and
confirmation decisions, the advisor SPI and the errors. The rest lives in named modules:
``chatclient.events`` (stream events), ``chatclient.tools`` (callbacks, the manager and its limits,
confirmation policies, pending-state stores, ``seal``/``unseal``), ``chatclient.observation``
(instrumentation), ``chatclient.client`` and ``chatclient.response_spec`` (the spec and builder
types), ``chatclient.streaming`` (the accumulator), ``chatclient.responses`` (metadata types) and
``chatclient.testing`` (scripted models, conformance kits).
"""

import typing as _typing

from ._lazy import lazy_exports as _lazy_exports
from ._version import __version__
from .errors import (
    AdvisorChainError,
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ChatClientError,
    ConfigurationError,
    ContextLengthExceededError,
    DeadlineExceeded,
    DuplicateToolNameError,
    MalformedResponseError,
    NotFoundError,
    OverloadedError,
    PendingStateError,
    PendingStateExpiredError,
    PendingStateNotFoundError,
    PendingStateReusedError,
    PendingStateTamperedError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    ScriptExhaustedError,
    ServerError,
    StreamIncompleteError,
    StructuredOutputError,
    ToolArgumentsError,
    ToolCallDecisionError,
    ToolCallLimitExceededError,
    ToolCallUnauthorizedError,
    ToolError,
    ToolExecutionError,
    UnknownToolError,
)

if _typing.TYPE_CHECKING:
    from .advisor import (
        Advisor,
        AdvisorOrder,
        AsyncCallAdvisor,
        AsyncCallNext,
        AsyncStreamAdvisor,
        AsyncStreamNext,
        BaseAdvisor,
        CallAdvisor,
        CallNext,
        ChatClientRequest,
        ChatClientResponse,
        ContextKeys,
        StreamAdvisor,
        StreamNext,
    )
    from .client import ChatClient
    from .messages import (
        AssistantMessage,
        FilePart,
        ImagePart,
        JsonPart,
        Message,
        SystemMessage,
        TextPart,
        ToolCall,
        ToolResponse,
        ToolResponseMessage,
        ToolResult,
        UserMessage,
    )
    from .model import ChatModel
    from .options import ChatOptions, ToolCallingChatOptions
    from .prompt import Prompt
    from .responses import ChatResponse, FinishReason, Generation, Usage
    from .tools import (
        Approver,
        PendingToolCalls,
        ToolCallback,
        ToolCallbackProvider,
        ToolCallDecision,
        ToolCallDecisions,
        ToolContext,
        awaiting_decision,
        tool,
    )
    from .turn import Turn, turn_messages

__all__ = [
    "__version__",
    "Advisor",
    "AdvisorChainError",
    "AdvisorOrder",
    "APIConnectionError",
    "APITimeoutError",
    "Approver",
    "AssistantMessage",
    "AsyncCallAdvisor",
    "AsyncCallNext",
    "AsyncStreamAdvisor",
    "AsyncStreamNext",
    "AuthenticationError",
    "awaiting_decision",
    "BadRequestError",
    "BaseAdvisor",
    "CallAdvisor",
    "CallNext",
    "ChatClient",
    "ChatClientError",
    "ChatClientRequest",
    "ChatClientResponse",
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "ConfigurationError",
    "ContextKeys",
    "ContextLengthExceededError",
    "DeadlineExceeded",
    "DuplicateToolNameError",
    "FilePart",
    "FinishReason",
    "Generation",
    "ImagePart",
    "JsonPart",
    "MalformedResponseError",
    "Message",
    "NotFoundError",
    "OverloadedError",
    "PendingStateError",
    "PendingStateExpiredError",
    "PendingStateNotFoundError",
    "PendingStateReusedError",
    "PendingStateTamperedError",
    "PendingToolCalls",
    "PermissionDeniedError",
    "Prompt",
    "ProviderError",
    "RateLimitError",
    "ScriptExhaustedError",
    "ServerError",
    "StreamAdvisor",
    "StreamIncompleteError",
    "StreamNext",
    "StructuredOutputError",
    "SystemMessage",
    "TextPart",
    "tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallDecision",
    "ToolCallDecisionError",
    "ToolCallDecisions",
    "ToolCallingChatOptions",
    "ToolCallLimitExceededError",
    "ToolCallUnauthorizedError",
    "ToolContext",
    "ToolError",
    "ToolExecutionError",
    "ToolResponse",
    "ToolResponseMessage",
    "ToolResult",
    "Turn",
    "turn_messages",
    "UnknownToolError",
    "Usage",
    "UserMessage",
]

import logging as _logging

# A library logs, the application decides where it goes: without a handler of its own nothing shows.
_logging.getLogger("chatclient").addHandler(_logging.NullHandler())

# The rest is loaded on first use: `from chatclient import ChatClient` pays for no tool machinery.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".advisor": [
            "Advisor",
            "AdvisorOrder",
            "AsyncCallAdvisor",
            "AsyncCallNext",
            "AsyncStreamAdvisor",
            "AsyncStreamNext",
            "BaseAdvisor",
            "CallAdvisor",
            "CallNext",
            "ChatClientRequest",
            "ChatClientResponse",
            "ContextKeys",
            "StreamAdvisor",
            "StreamNext",
        ],
        ".client": ["ChatClient"],
        ".messages": [
            "AssistantMessage",
            "FilePart",
            "ImagePart",
            "JsonPart",
            "Message",
            "SystemMessage",
            "TextPart",
            "ToolCall",
            "ToolResponse",
            "ToolResponseMessage",
            "ToolResult",
            "UserMessage",
        ],
        ".model": ["ChatModel"],
        ".options": ["ChatOptions", "ToolCallingChatOptions"],
        ".prompt": ["Prompt"],
        ".responses": ["ChatResponse", "FinishReason", "Generation", "Usage"],
        ".tools": [
            "Approver",
            "PendingToolCalls",
            "ToolCallback",
            "ToolCallbackProvider",
            "ToolCallDecision",
            "ToolCallDecisions",
            "ToolContext",
            "awaiting_decision",
            "tool",
        ],
        ".turn": ["Turn", "turn_messages"],
    },
)
