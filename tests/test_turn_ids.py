"""Turn ids (stored event ids and pending states come from them) are unique without a system call
per turn: a random prefix per process, drawn again in a forked child, and a counter. The tool loop
and session memory draw them from the one ``chatclient.turn.new_turn_id``."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

from chatclient import ChatClient
from chatclient.testing import ScriptedChatModel
from chatclient.turn import new_turn_id, turn_of


def _child_id(queue: multiprocessing.Queue[str]) -> None:
    queue.put(new_turn_id())


def test_turn_ids_differ_within_a_process() -> None:
    ids = {new_turn_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith("turn-") for i in ids)


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_forked_child_draws_its_own_prefix() -> None:
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = context.Queue()
    before = new_turn_id()
    child = context.Process(target=_child_id, args=(queue,))
    child.start()
    in_child = queue.get(timeout=30)
    child.join(timeout=30)
    after = new_turn_id()
    assert in_child not in (before, after)
    assert in_child.rsplit("-", 1)[0] != after.rsplit("-", 1)[0], "the child's prefix is its own"


def _loop_turn_id() -> str:
    response = ChatClient.create(ScriptedChatModel(["Hi."])).prompt().user("Hello").call().chat_client_response()
    turn = turn_of(response)
    assert turn is not None
    return turn.id


def _child_loop_id(queue: multiprocessing.Queue[str]) -> None:
    queue.put(_loop_turn_id())


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_the_tool_loop_in_a_forked_child_does_not_repeat_its_parents_turn_ids() -> None:
    before = _loop_turn_id()
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = context.Queue()
    child = context.Process(target=_child_loop_id, args=(queue,))
    child.start()
    in_child = queue.get(timeout=30)
    child.join(timeout=30)
    assert before.rsplit("-", 1)[0] == new_turn_id().rsplit("-", 1)[0], "the loop draws from the shared ids"
    assert in_child.rsplit("-", 1)[0] != before.rsplit("-", 1)[0]
