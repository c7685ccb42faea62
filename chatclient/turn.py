"""A turn: one user message and everything the model and the tools did to answer it.

The tool loop gives each turn an id and records its messages in the response context, the same in
all four modes and across a confirmation pause: a turn that paused and was resumed is one turn,
with the rounds before the pause included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .messages import Message

if TYPE_CHECKING:
    from .advisor import ChatClientResponse

__all__ = ["Turn", "turn_messages", "turn_of"]


@dataclass(frozen=True, slots=True)
class Turn:
    """The id of a turn and its messages, in order: the user message, every assistant tool-call
    message, every tool result and the final answer (the paused reply, when it paused).

    A ``return_direct`` turn ends with the tool results: they are the answer, and no assistant
    message is made up for them.
    """

    id: str
    messages: tuple[Message, ...]
    rounds: int
    paused: bool = False


def turn_of(response: ChatClientResponse) -> Turn | None:
    """The turn a response ended, or ``None`` when no tool loop ran (it was switched off)."""
    from .advisor import ContextKeys

    turn = response.context.get(ContextKeys.TURN)
    return turn if isinstance(turn, Turn) else None


def turn_messages(response: ChatClientResponse) -> tuple[Message, ...]:
    """The messages of the turn ``response`` ended; empty when no tool loop ran."""
    turn = turn_of(response)
    return turn.messages if turn is not None else ()
