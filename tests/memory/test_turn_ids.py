"""The memory advisor's turn ids (the event ids come from them) are unique without a system call
per turn: a random prefix per process, drawn again in a forked child, and a counter."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

from chatclient.memory import advisor


def _child_id(queue: multiprocessing.Queue[str]) -> None:
    queue.put(advisor._new_turn_id())


def test_turn_ids_differ_within_a_process() -> None:
    ids = {advisor._new_turn_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith("turn-") for i in ids)


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_forked_child_draws_its_own_prefix() -> None:
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = context.Queue()
    before = advisor._new_turn_id()
    child = context.Process(target=_child_id, args=(queue,))
    child.start()
    in_child = queue.get(timeout=30)
    child.join(timeout=30)
    after = advisor._new_turn_id()
    assert in_child not in (before, after)
    assert in_child.rsplit("-", 1)[0] != after.rsplit("-", 1)[0], "the child's prefix is its own"
