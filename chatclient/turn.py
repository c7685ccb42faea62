"""A turn: one user message and everything the model and the tools did to answer it.

The tool loop gives each turn an id and records its messages in the response context, the same in
all four modes and across a confirmation pause: a turn that paused and was resumed is one turn,
with the rounds before the pause included.
"""

from __future__ import annotations

import itertools
import os
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._trusted import fast_frozen
from .messages import Message

if TYPE_CHECKING:
    from .envelope import ChatClientResponse

__all__ = ["Turn", "new_turn_id", "turn_messages", "turn_of"]


@fast_frozen
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
    from .envelope import ContextKeys

    turn = response.context.get(ContextKeys.TURN)
    return turn if isinstance(turn, Turn) else None


def turn_messages(response: ChatClientResponse) -> tuple[Message, ...]:
    """The messages of the turn ``response`` ended; empty when no tool loop ran."""
    turn = turn_of(response)
    return turn.messages if turn is not None else ()


class _TurnIds:
    """Unique turn ids without a system call per turn: a random prefix per process (a forked child
    draws its own, or it would repeat its parent's ids) and a counter. Stored event ids and pending
    states come from them, so two turns must never share one."""

    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        self.prefix, self.counter = f"turn-{secrets.token_hex(10)}-", itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.counter):x}"


new_turn_id = _TurnIds()
"""A new turn id, unique across processes (and forks); the tool loop and session memory share it."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=new_turn_id.renew)
