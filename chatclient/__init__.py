"""chatclient: a fluent LLM client whose tool loop is one advisor in a linear chain.

>>> from chatclient import ChatClient
>>> from chatclient.testing import ScriptedChatModel
>>> ChatClient.create(ScriptedChatModel(["Hi!"])).prompt("Hello").call().content()
'Hi!'
"""

from ._version import __version__
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
    ToolAdvisor,
    aggregate_chat_client_responses,
)
from .client import ChatClient, ChatClientBuilder, ChatClientRequestSpec
from .errors import (
    AdvisorChainError,
    ChatClientError,
    ConfigurationError,
    DuplicateToolNameError,
    ScriptExhaustedError,
    StructuredOutputError,
    ToolArgumentsError,
    ToolCallLimitExceededError,
    ToolError,
    ToolExecutionError,
    UnknownToolError,
)
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from .model import ChatModel
from .options import ChatOptions, ToolCallingChatOptions
from .prompt import Prompt
from .response_spec import (
    AsyncCallResponseSpec,
    AsyncStreamResponseSpec,
    CallResponseSpec,
    StreamResponseSpec,
)
from .responses import ChatResponse, ChatResponseMetadata, FinishReason, Generation, GenerationMetadata, Usage
from .streaming import ChatResponseAccumulator
from .tools import (
    DefaultToolExceptionProcessor,
    FunctionToolCallback,
    ToolCallback,
    ToolCallbackProvider,
    ToolCallingManager,
    ToolCallLimitPolicy,
    ToolContext,
    ToolDefinition,
    ToolExecutionResult,
    ToolMetadata,
    tool,
)

__all__ = [
    "__version__",
    "Advisor",
    "AdvisorChainError",
    "AdvisorOrder",
    "aggregate_chat_client_responses",
    "AssistantMessage",
    "AsyncCallAdvisor",
    "AsyncCallNext",
    "AsyncCallResponseSpec",
    "AsyncStreamAdvisor",
    "AsyncStreamNext",
    "AsyncStreamResponseSpec",
    "BaseAdvisor",
    "CallAdvisor",
    "CallNext",
    "CallResponseSpec",
    "ChatClient",
    "ChatClientBuilder",
    "ChatClientError",
    "ChatClientRequest",
    "ChatClientRequestSpec",
    "ChatClientResponse",
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseAccumulator",
    "ChatResponseMetadata",
    "ConfigurationError",
    "ContextKeys",
    "DefaultToolExceptionProcessor",
    "DuplicateToolNameError",
    "FinishReason",
    "FunctionToolCallback",
    "Generation",
    "GenerationMetadata",
    "Message",
    "Prompt",
    "ScriptExhaustedError",
    "StreamAdvisor",
    "StreamNext",
    "StreamResponseSpec",
    "StructuredOutputError",
    "SystemMessage",
    "tool",
    "ToolAdvisor",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallingChatOptions",
    "ToolCallingManager",
    "ToolCallLimitExceededError",
    "ToolCallLimitPolicy",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolMetadata",
    "ToolResponse",
    "ToolResponseMessage",
    "UnknownToolError",
    "Usage",
    "UserMessage",
]
