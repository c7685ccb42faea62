"""``ToolRetry``: a tool asks the model for a corrected call instead of failing.

The message goes back to the model as the call's result, marked as a retry request (``is_error``
and ``metadata["retry"]``, the retry's number in this turn), so the model can call again with what
the tool asked for. Retries are tool calls like any other, so they count against the loop's limits
(per tool, in total, identical calls); on top of those a tool may be retried at most
``max_retries`` times per turn (``@tool(max_retries=...)``, else ``ToolCallLimits.max_tool_retries``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ToolCallLimitExceededError, ToolError
from ..messages import Message, ToolResponseMessage, UserMessage

__all__ = ["RETRY_KEY", "ToolRetriesExceededError", "ToolRetry", "retries_in_turn", "retry_text"]

RETRY_KEY = "retry"
"""The tool response's metadata key that marks a retry request; its value is the retry's number."""


class ToolRetry(ToolError):
    """Raise it from a tool to ask the model for a corrected call: ``raise ToolRetry("date must be
    ISO 8601, e.g. 2026-05-01")``. Nothing failed: the model is told what to fix, and the exception
    processor is not asked (a processor that raises every failure still lets a retry through)."""

    def __init__(self, message: str, *, tool_name: str = "", call_id: str | None = None) -> None:
        if not isinstance(message, str):
            raise TypeError(f"ToolRetry's message is the text telling the model what to fix, not {message!r}")
        if not message.strip():
            raise ValueError("ToolRetry needs a message telling the model what to fix")
        super().__init__(message, tool_name=tool_name, call_id=call_id)


class ToolRetriesExceededError(ToolCallLimitExceededError):
    """A tool asked for a corrected call more often in one turn than it may (``kind="retries"``).

    Unlike the other limits this one is found after the batch ran: under
    ``ToolCallLimitPolicy.RAISE`` it is raised once the whole batch has finished (the other calls'
    results are not kept); under ``FINAL_ANSWER`` (the default) the model is told and asked once
    more, without tools, for an answer."""

    def __init__(self, retry: ToolRetry, *, tool_name: str, limit: int) -> None:
        super().__init__(
            f"Tool '{tool_name}' asked for a corrected call more than {limit} time(s) in this turn "
            f"(max_retries={limit}); it is not retried again. Its last request: {retry}",
            tool_name=tool_name,
            limit=limit,
            kind="retries",
        )
        self.call_id = retry.call_id
        self.__cause__ = retry


def retry_text(retry: ToolRetry) -> str:
    """What the model is told: the tool's request, and that a corrected call is expected."""
    return f"The tool asks for a corrected call: {retry}"


def retries_in_turn(history: Sequence[Message]) -> dict[str, int]:
    """Retry requests per tool in the turn so far (everything after the last ``UserMessage``);
    read only when a tool asks for a retry, so a turn without one pays nothing."""
    retries: dict[str, int] = {}
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, UserMessage):
            break
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                if RETRY_KEY in response.metadata:
                    retries[response.name] = retries.get(response.name, 0) + 1
    return retries
