"""The chat loop's own cost, in instructions: deterministic, where timings on a shared machine are not.

Each series runs one request ``N`` times under valgrind's callgrind, instrumentation switched on
only around the ``N`` requests (after a warm-up of 50); the figure is the difference of N = 300 and
N = 100, divided by 200, so start-up and the switch itself cancel out. Repeat runs agree within
about 1 % (hash seeds differ between processes). Needs ``valgrind`` (``callgrind_control``).

    .venv/bin/python -m benchmarks.loop_instructions [SERIES ...]

Series (no network; a scripted model or two prebuilt replies):

- ``round``: the MCP benchmark's "chat loop alone (local tool)": ``ScriptedChatModel`` asks for a
  local ``async def`` tool, the loop runs it, the model answers; ``acall()``.
- ``round-loop``: the same round with two prebuilt replies instead of the scripted model (whose
  script and reply building cost ~0.17 M instructions a round): the loop and the client alone.
- ``round-provider``: as ``round-loop``, the tool from a provider asked once per request (an MCP
  provider's shape: the same cached tool set each time).
- ``round-sync-tool``: as ``round-loop`` with a sync tool, which the async path runs in a worker thread.
- ``round-sync``: ``round`` with a sync tool through ``call()`` (run inline on the caller's thread).
- ``call`` / ``acall``: one plain reply, no tools (S1's path, with the scripted model).

To compare another checkout, run this file with ``PYTHONPATH=<that checkout>``.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from chatclient import AssistantMessage, ChatClient, ChatResponse, Prompt, ToolResponseMessage, tool
from chatclient.model import ChatModel
from chatclient.responses import FinishReason
from chatclient.testing import ScriptedChatModel, tool_call
from chatclient.tools.resolve import split_tools

SERIES = ("round", "round-loop", "round-provider", "round-sync-tool", "round-sync", "call", "acall")
WARMUP = 50


def _script(name: str) -> Callable[[Prompt], Any]:
    def reply(prompt: Prompt) -> Any:  # as benchmarks.mcp_round's script
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return last.responses[0].response_data
        return AssistantMessage(None, tool_calls=[tool_call(name, {"a": 2, "b": 3})])

    return reply


class Prebuilt(ChatModel):
    """Two replies built once: asks for the tool, then answers "5" once it sees the result "5" (any other
    result gets a reply saying so, built then). The loop still does all of its own work each round;
    only the test double's reply building (a script call, a ``json.dumps``, a ``ToolCall``, the reply
    models) is left out."""

    def __init__(self, name: str) -> None:
        ask = AssistantMessage(None, tool_calls=[tool_call(name, {"a": 2, "b": 3})])
        self.ask = ChatResponse.of(ask, finish_reason=FinishReason.TOOL_CALLS)
        self.answer = ChatResponse.of("5", finish_reason=FinishReason.STOP)

    def call(self, prompt: Prompt) -> ChatResponse:
        last = prompt.messages[-1]
        if not isinstance(last, ToolResponseMessage):
            return self.ask
        result = last.responses[0].response_data
        return self.answer if result == "5" else ChatResponse.of(f"unexpected tool result {result!r}")

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)


class _Provider:
    """Hands back the same tool set on every request, as a listed MCP provider does."""

    def __init__(self, *tools: Any) -> None:
        self.tools = tuple(split_tools(tools)[0])

    async def tool_callbacks(self) -> tuple[Any, ...]:
        return self.tools


@tool(name="add", description="Add two numbers")
async def _add(a: int, b: int) -> str:
    return str(a + b)


@tool(name="add", description="Add two numbers")
def _add_sync(a: int, b: int) -> str:
    return str(a + b)


def _acalls(loop: asyncio.AbstractEventLoop, spec: Any) -> Callable[[int], object]:
    async def run(n: int) -> None:
        for _ in range(n):
            await spec.acall().content()

    return lambda n: loop.run_until_complete(run(n))


def _calls(spec: Any) -> Callable[[int], object]:
    return lambda n: [spec.call().content() for _ in range(n)]


def _ops() -> dict[str, Callable[[int], object]]:
    loop = asyncio.new_event_loop()
    scripted = ChatClient.create(ScriptedChatModel(_script("add")))
    plain = ChatClient.create(ScriptedChatModel(lambda prompt: "hello"))
    return {
        "round": _acalls(loop, scripted.prompt("2+3?").tools(_add)),
        "round-loop": _acalls(loop, ChatClient.create(Prebuilt("add")).prompt("2+3?").tools(_add)),
        "round-provider": _acalls(loop, ChatClient.create(Prebuilt("add")).prompt("2+3?").tools(_Provider(_add))),
        "round-sync-tool": _acalls(loop, ChatClient.create(Prebuilt("add")).prompt("2+3?").tools(_add_sync)),
        "round-sync": _calls(scripted.prompt("2+3?").tools(_add_sync)),
        "call": lambda n: [plain.prompt("hi").call().content() for _ in range(n)],
        "acall": _acalls(loop, plain.prompt("hi")),
    }


def _child(series: str, n: int) -> None:
    """Under callgrind: warm up, then count ``n`` requests."""
    op = _ops()[series]
    op(WARMUP)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], stdout=subprocess.DEVNULL, check=True)
    op(n)
    subprocess.run(["callgrind_control", "-i", "off", pid], stdout=subprocess.DEVNULL, check=True)


def _instructions(series: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                   sys.executable, os.path.abspath(__file__), "--child", series, str(n)]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for path in glob.glob(out + "*"):  # one file per thread part
            with open(path) as file:
                total += sum(int(line.split()[1]) for line in file if line.startswith("totals:"))
        return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("series", nargs="*", metavar="SERIES", help=f"any of {', '.join(SERIES)} (default: all)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return
    unknown = sorted(set(args.series) - set(SERIES))
    if unknown:
        parser.error(f"unknown series {unknown}; known: {', '.join(SERIES)}")
    args.series = args.series or list(SERIES)
    print(f"{'series':18} {'instructions / request':>24}")
    for series in args.series:
        per_request = (_instructions(series, 300) - _instructions(series, 100)) / 200
        print(f"{series:18} {per_request / 1e6:22.3f} M", flush=True)


if __name__ == "__main__":
    main()
