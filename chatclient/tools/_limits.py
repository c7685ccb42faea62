"""Per-turn tool-call limits, counted from the conversation itself so the manager keeps no state.

A *turn* is everything after the last ``UserMessage``: the calls of earlier rounds of the same turn
are read back from the assistant messages in the prompt.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from ..errors import ConfigurationError, ToolCallLimitExceededError
from ..messages import AssistantMessage, Message, ToolCall, UserMessage
from ._results import normalize_arguments

__all__ = ["ToolCallLimitPolicy", "ToolCallLimits", "canonical_arguments"]


class ToolCallLimitPolicy(Enum):
    """What happens when a call of a reply would exceed a limit."""

    FINAL_ANSWER = "final_answer"
    """The calls within the limits run; each call over a limit gets the breach message as its result,
    and the loop asks the model once more, without tools, for an answer."""
    RAISE = "raise"
    """Raise :class:`~chatclient.errors.ToolCallLimitExceededError` before any call of the reply runs."""


@dataclass(frozen=True)
class ToolCallLimits:
    max_calls_per_tool: int = 40
    max_calls_for_tool: Mapping[str, int] = field(default_factory=dict)
    """Per-tool overrides of ``max_calls_per_tool``."""
    excluded_tools: frozenset[str] = frozenset()
    """Tools exempt from the per-tool limit; they still count towards the total and identical guard."""
    max_total_tool_calls: int = 150
    max_identical_calls: int = 3
    """How often one tool may be called with the same (canonical) arguments."""
    policy: ToolCallLimitPolicy = ToolCallLimitPolicy.FINAL_ANSWER
    max_tool_retries: int = 1
    """How often per turn a tool may raise ``ToolRetry`` (a tool's ``max_retries`` overrides it);
    the retried calls count against the limits above as well."""

    def __post_init__(self) -> None:
        limits = {
            "max_calls_per_tool": self.max_calls_per_tool,
            "max_total_tool_calls": self.max_total_tool_calls,
            "max_identical_calls": self.max_identical_calls,
            "max_tool_retries": self.max_tool_retries,
            **{f"max_calls_for_tool({name!r})": limit for name, limit in self.max_calls_for_tool.items()},
        }
        for label, limit in limits.items():
            if limit < 0:
                raise ConfigurationError(f"{label} must not be negative, got {limit}")

    def check(self, history: Sequence[Message], calls: Sequence[ToolCall]) -> list[ToolCallLimitExceededError | None]:
        """For each call of a reply, in order, the breach it would cause or ``None``.

        Calls within the limits are counted as they are accepted, so the fourth of four identical
        calls in one reply is the one that breaches ``max_identical_calls=3``.
        """
        earlier = 0
        for index in range(len(history) - 1, -1, -1):
            message = history[index]
            if isinstance(message, UserMessage):
                break
            if isinstance(message, AssistantMessage):
                earlier += len(message.tool_calls)
        if earlier + len(calls) <= self._lowest_limit:
            return [None] * len(calls)  # not even every call of the turn on one tool reaches a limit
        per_tool, identical = _count_turn(history)
        total = sum(per_tool.values())
        breaches: list[ToolCallLimitExceededError | None] = []
        for call in calls:
            name = call.name
            key = (name, canonical_arguments(call.arguments))
            so_far, same = per_tool.get(name, 0), identical.get(key, 0)
            within = (
                so_far < self.max_calls_for_tool.get(name, self.max_calls_per_tool)
                and total < self.max_total_tool_calls
                and same < self.max_identical_calls
            )  # the usual case, decided without building a breach
            breach = None if within else self._breach(name, so_far, total, same)
            if breach is None:
                per_tool[name] = per_tool.get(name, 0) + 1
                identical[key] = identical.get(key, 0) + 1
                total += 1
            breaches.append(breach)
        return breaches

    @functools.cached_property
    def _lowest_limit(self) -> int:
        """The lowest of the limits: a turn with no more calls than this breaches none (counted per
        tool, per arguments or in all, no count can be higher than the turn's calls)."""
        return min(self.max_calls_per_tool, self.max_total_tool_calls, self.max_identical_calls,
                   *self.max_calls_for_tool.values())  # fmt: skip

    def _breach(self, name: str, calls: int, total: int, identical: int) -> ToolCallLimitExceededError | None:
        limit = self.max_calls_for_tool.get(name, self.max_calls_per_tool)
        if name not in self.excluded_tools and calls >= limit:
            message = (
                f"Tool call limit ({limit}) exceeded for tool '{name}'. "
                "No further calls to this tool are allowed in this turn."
            )
            return ToolCallLimitExceededError(message, tool_name=name, limit=limit, kind="per_tool")
        if total >= self.max_total_tool_calls:
            limit = self.max_total_tool_calls
            message = f"Total tool call limit ({limit}) exceeded for this turn. No further tool calls are allowed."
            return ToolCallLimitExceededError(message, tool_name=name, limit=limit, kind="total")
        if identical >= self.max_identical_calls:
            limit = self.max_identical_calls
            message = (
                f"Identical call to tool '{name}' repeated {limit} times in this turn; "
                "not running it again. Use the results you already have."
            )
            return ToolCallLimitExceededError(message, tool_name=name, limit=limit, kind="identical")
        return None


@functools.lru_cache(maxsize=4096)
def canonical_arguments(arguments: str) -> str:
    """The arguments as compact JSON with sorted keys, so key order and spacing do not matter.

    Blank or ``null`` means ``{}``; text that is not JSON is compared as it is. Cached: every round
    canonicalises the turn's earlier calls again (limits, the denied-call guard, digests).
    """
    try:
        return json.dumps(
            json.loads(normalize_arguments(arguments)), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except (ValueError, RecursionError):
        return arguments


def _count_turn(history: Sequence[Message]) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Calls per tool and per (tool, canonical arguments) in the turn so far (plain dicts: a ``Counter``
    costs more to make than the first round of a turn has to count)."""
    per_tool: dict[str, int] = {}
    identical: dict[tuple[str, str], int] = {}
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                name = call.name
                key = (name, canonical_arguments(call.arguments))
                per_tool[name] = per_tool.get(name, 0) + 1
                identical[key] = identical.get(key, 0) + 1
    return per_tool, identical
