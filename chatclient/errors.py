"""The errors chatclient raises, in one tree.

::

    ChatClientError
    ├── ConfigurationError (ValueError)      misuse found while building a request or a chain
    │   └── DuplicateToolNameError           two tools with one name in one request
    ├── AdvisorChainError                    an advisor cannot serve the requested mode
    ├── StructuredOutputError                ``entity()`` could not parse the model's reply
    ├── ScriptExhaustedError                 a ScriptedChatModel ran out of replies (tests)
    └── ToolError                            failures around tool execution
        ├── ToolArgumentsError               malformed JSON or arguments failing validation
        ├── UnknownToolError                 the model called a tool that is not registered
        ├── ToolExecutionError               the tool itself raised (``__cause__`` is the original)
        └── ToolCallLimitExceededError       a per-turn limit was hit under the RAISE policy

By default the tool loop turns ``ToolArgumentsError``, ``UnknownToolError`` and
``ToolExecutionError`` into a message for the model instead of raising (see
:class:`chatclient.ToolCallingManager`).
"""

from __future__ import annotations

__all__ = [
    "AdvisorChainError",
    "ChatClientError",
    "ConfigurationError",
    "DuplicateToolNameError",
    "ScriptExhaustedError",
    "StructuredOutputError",
    "ToolArgumentsError",
    "ToolCallLimitExceededError",
    "ToolError",
    "ToolExecutionError",
    "UnknownToolError",
]


class ChatClientError(Exception):
    """Base of every error raised by chatclient."""


class ConfigurationError(ChatClientError, ValueError):
    """The request, client or chain is configured in a way that cannot work."""


class DuplicateToolNameError(ConfigurationError):
    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(
            f"Multiple tools with the same name ({', '.join(names)}) in one request; tool names must be unique"
        )


class AdvisorChainError(ChatClientError):
    """An advisor in the chain does not implement the mode (call/stream, sync/async) being run."""


class StructuredOutputError(ChatClientError):
    """The reply could not be converted to the requested type; ``text`` keeps the raw reply."""

    def __init__(self, message: str, text: str | None) -> None:
        self.text = text
        super().__init__(message)


class ScriptExhaustedError(ChatClientError):
    """A scripted test model was asked for more replies than it was given."""


class ToolError(ChatClientError):
    """Something went wrong around one tool call; ``tool_name`` and ``call_id`` say which."""

    def __init__(self, message: str, *, tool_name: str, call_id: str | None = None) -> None:
        self.tool_name = tool_name
        self.call_id = call_id
        super().__init__(message)


class ToolArgumentsError(ToolError):
    """The model's arguments are not valid JSON or fail the tool's schema."""


class UnknownToolError(ToolError):
    """The model called a tool that is not registered for this request."""

    def __init__(self, message: str, *, tool_name: str, call_id: str | None, available: list[str]) -> None:
        self.available = available
        super().__init__(message, tool_name=tool_name, call_id=call_id)


class ToolExecutionError(ToolError):
    """The tool raised; the original exception is ``__cause__``."""


class ToolCallLimitExceededError(ToolError):
    """A per-turn tool-call limit (per tool, total, or identical calls) was reached.

    Raised only under ``ToolCallLimitPolicy.RAISE``; no call of the offending reply has run.
    """

    def __init__(self, message: str, *, tool_name: str, limit: int, kind: str) -> None:
        self.limit = limit
        self.kind = kind
        super().__init__(message, tool_name=tool_name)
