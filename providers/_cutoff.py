"""The async counterpart of the watchdog: what is still running at its deadline is cut off.

An awaited exchange (connect, headers, a whole body) is cut by cancelling its task, and the caller
turns that cancellation into the deadline's error (:meth:`TaskCut.stop`); a streamed body, read by a
task that also does other things between chunks, is cut by shutting its socket down instead.

One timer per event loop, at the earliest deadline in flight, serves every request of that loop: a
request adds an entry to a set and removes it when its exchange ends. ``asyncio.timeout`` would cost
a timer handle, a heap push and a cancel per request (3-7 µs of a 50 µs call); with one deadline for
all (a model's ``timeout``), the timer here moves only when it fires. A timer left behind by an
earlier one finds nothing to do. No reference from here keeps a closed loop alive.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Cut", "TaskCut", "cancel_at", "cut_at"]


class Cut:
    """An entry of the loop's :class:`_Cutoffs`: ``fire()`` runs if it is still there at ``when``."""

    __slots__ = ("_cutoffs", "fire", "fired", "when")

    def __init__(self, cutoffs: _Cutoffs, when: float, fire: Callable[[], object]) -> None:
        self._cutoffs, self.when, self.fire, self.fired = cutoffs, when, fire, False

    def stop(self) -> bool:
        """Remove the entry; whether it had fired."""
        self._cutoffs.cuts.discard(self)
        return self.fired


class TaskCut(Cut):
    """Cancels the task that made it, at its deadline."""

    __slots__ = ("_cancelling", "_task")

    def __init__(self, cutoffs: _Cutoffs, when: float, task: Any) -> None:
        super().__init__(cutoffs, when, task.cancel)
        self._task = task
        self._cancelling = task.cancelling() if sys.version_info >= (3, 11) else 0

    def stop(self) -> bool:
        """Remove the entry; True when the deadline cancelled the task (and nothing else did): the
        cancellation is taken back, and the caller raises the deadline's error in its place."""
        if not super().stop():
            return False
        if sys.version_info >= (3, 11):
            return bool(self._task.uncancel() <= self._cancelling)
        return True  # pragma: no cover - Python 3.10


class _Cutoffs:
    """The cuts of one event loop, and the time its timer is set for."""

    __slots__ = ("__weakref__", "cuts", "next")

    def __init__(self) -> None:
        self.cuts: set[Cut] = set()
        self.next = math.inf

    def add(self, loop: Any, cut: Cut) -> None:
        self.cuts.add(cut)
        if cut.when < self.next:
            self.next = cut.when
            loop.call_at(cut.when, self._fire, cut.when, loop)  # the loop keeps the handle, not us

    def _fire(self, when: float, loop: Any) -> None:
        if when != self.next:
            return  # an earlier cut replaced this timer, and its own has run or will
        now = max(loop.time(), when)  # a loop runs a timer up to its clock's resolution early
        for cut in [cut for cut in self.cuts if cut.when <= now]:
            self.cuts.discard(cut)
            cut.fired = True
            cut.fire()
        self.next = min((cut.when for cut in self.cuts), default=math.inf)
        if self.next != math.inf:
            loop.call_at(self.next, self._fire, self.next, loop)


_by_loop: weakref.WeakKeyDictionary[Any, _Cutoffs] = weakref.WeakKeyDictionary()
_last: tuple[weakref.ref[Any], _Cutoffs] | None = None
"""The last loop asked about and its cuts: every request of a loop asks the same question."""


def _cutoffs(loop: Any) -> _Cutoffs:
    global _last
    last = _last
    if last is not None and last[0]() is loop:
        return last[1]
    cutoffs = _by_loop.get(loop)
    if cutoffs is None:
        cutoffs = _by_loop[loop] = _Cutoffs()
    _last = (weakref.ref(loop), cutoffs)
    return cutoffs


def cancel_at(left: float) -> TaskCut:
    """Cancel the current task in ``left`` seconds unless :meth:`TaskCut.stop` comes first."""
    import asyncio

    loop = asyncio.get_running_loop()
    cutoffs = _cutoffs(loop)
    task = asyncio.current_task()
    if task is None:  # a coroutine driven by hand, outside any task: nothing to cancel, nothing added
        return TaskCut(cutoffs, math.inf, _NO_TASK)
    cut = TaskCut(cutoffs, loop.time() + left, task)
    cutoffs.add(loop, cut)
    return cut


class _NoTask:
    """Stands for the missing task of a coroutine driven outside one (its reads keep their timeouts)."""

    def cancel(self) -> bool:
        return False

    def cancelling(self) -> int:
        return 0


_NO_TASK = _NoTask()


def cut_at(left: float, fire: Callable[[], object]) -> Cut:
    """Run ``fire()`` in ``left`` seconds, in the running loop, unless :meth:`Cut.stop` comes first."""
    import asyncio

    loop = asyncio.get_running_loop()
    cutoffs = _cutoffs(loop)
    cut = Cut(cutoffs, loop.time() + left, fire)
    cutoffs.add(loop, cut)
    return cut
