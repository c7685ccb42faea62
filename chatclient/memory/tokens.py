"""Counting a message's tokens for compaction: pluggable, ``tiktoken`` when it is installed.

A counter is any ``Callable[[str], int]``. :func:`default_token_counter` uses ``tiktoken``
(``pip install "chatclient[tokens]"``, imported on first use) and otherwise a cheap estimate of
four characters per token. Tool calls and tool results count by their rendered text, so a turn
heavy with tool output weighs what it costs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable

from ..errors import ConfigurationError
from ..messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage, UserMessage

__all__ = [
    "TokenCounter",
    "default_token_counter",
    "estimate_tokens",
    "message_text",
    "messages_tokens",
    "tiktoken_counter",
]

TokenCounter = Callable[[str], int]

_PER_MESSAGE = 4  # the role and separators every chat format adds around a message


def estimate_tokens(text: str) -> int:
    """About four characters per token: cheap, and close enough to decide when to compact."""
    return (len(text) + 3) // 4


def tiktoken_counter(encoding: str = "o200k_base") -> TokenCounter:
    """A counter on a ``tiktoken`` encoding (loaded once, on the first count)."""
    loaded: list[Callable[[str], list[int]]] = []

    def count(text: str) -> int:
        if not loaded:
            try:
                tiktoken = importlib.import_module("tiktoken")
            except ImportError as exc:
                raise ConfigurationError('Counting with tiktoken needs: pip install "chatclient[tokens]"') from exc
            loaded.append(tiktoken.get_encoding(encoding).encode)
        return len(loaded[0](text))

    return count


def default_token_counter() -> TokenCounter:
    """``tiktoken`` when it is installed, otherwise :func:`estimate_tokens`."""
    return tiktoken_counter() if importlib.util.find_spec("tiktoken") is not None else estimate_tokens


def message_text(message: Message) -> str:
    """The text a model reads for ``message``: its text, each tool call (name and arguments) and
    each tool result (name and result)."""
    if isinstance(message, (SystemMessage, UserMessage)):
        return message.text
    if isinstance(message, AssistantMessage):
        calls = [f"{c.name}({c.arguments})" for c in message.tool_calls]
        return "\n".join([*([message.text] if message.text else []), *calls])
    if isinstance(message, ToolResponseMessage):
        return "\n".join(f"{r.name} -> {r.response_data}" for r in message.responses)
    raise TypeError(f"Not a message: {message!r}")


def messages_tokens(messages: Iterable[Message], counter: TokenCounter) -> int:
    return sum(counter(message_text(m)) + _PER_MESSAGE for m in messages)
