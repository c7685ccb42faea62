"""S5's worker: one library in a fresh process, driven over stdin/stdout by the harness.

``python -m benchmarks.worker LIB WIRE PORT CONCURRENCY`` builds the library's adapter on the loopback
server, prints ``READY``, then for each ``run [N]`` line fires N (default CONCURRENCY) async calls at
once and prints ``DONE <ns> <ok> <cpu ns>`` (wall time, right answers, this process's CPU time);
``quit`` prints ``RSS <peak RSS kB>`` and exits. It exits by itself when its input closes and, in any
case, after ``--max-seconds`` (SIGALRM).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from .canned import TEXT

ROOT = Path(__file__).resolve().parent.parent
REPLY_TIMEOUT_S = 120.0


def serve(lib: str, wire: str, port: int, concurrency: int) -> None:
    from . import libs
    from .backends import LoopbackBackend

    loop = asyncio.new_event_loop()
    try:
        adapter = libs.make(lib, wire, LoopbackBackend(wire, port))
    except Exception as exc:
        print("ERROR " + json.dumps(libs.describe_error(exc)), flush=True)
        return
    print("READY", flush=True)

    async def batch(size: int) -> tuple[int, int, int]:
        start, cpu = time.perf_counter_ns(), time.process_time_ns()
        results = await asyncio.gather(*(adapter.acall() for _ in range(size)), return_exceptions=True)
        elapsed, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu
        return elapsed, sum(1 for r in results if r == TEXT), cpu

    for line in sys.stdin:
        command, _, size = line.strip().partition(" ")
        if command == "run":
            try:
                elapsed, ok, cpu = loop.run_until_complete(batch(int(size or concurrency)))
            except Exception as exc:
                print("ERROR " + json.dumps(libs.describe_error(exc)), flush=True)
                return
            print(f"DONE {elapsed} {ok} {cpu}", flush=True)
        elif command == "quit":
            break
    print(f"RSS {peak_rss_kb()}", flush=True)


def peak_rss_kb() -> int:
    """This process's peak resident set. On Linux ``ru_maxrss`` survives ``fork`` + ``exec`` (a child
    reports its parent's peak if that was higher), so ``VmHWM`` of the new address space is used."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Worker:
    """The harness's handle on one worker process."""

    def __init__(self, python: str, lib: str, wire: str, port: int, concurrency: int) -> None:
        self.lib, self.wire, self.concurrency = lib, wire, concurrency
        self.samples: list[int] = []
        self.cpu_samples: list[int] = []
        self.last_cpu = 0
        """CPU time of each measured batch: what the library costs, whatever else the machine runs."""
        self.error: str | None = None
        self.max_rss_kb = 0
        self.process = subprocess.Popen(
            [python, "-m", "benchmarks.worker", lib, wire, str(port), str(concurrency)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    def _reply(self, timeout: float = REPLY_TIMEOUT_S) -> str:
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout=timeout):
                raise TimeoutError(f"no reply within {timeout:.0f} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker exited (code {self.process.poll()})")
        if line.startswith("ERROR "):
            raise RuntimeError(json.loads(line[6:]))
        return line.strip()

    def _send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def wait_ready(self) -> None:
        try:
            self._reply()
        except Exception as exc:
            self.error = f"n/a (error: {exc})"

    def run(self, size: int | None = None) -> int:
        """One batch of ``size`` concurrent calls (default: the concurrency); returns its wall time in
        ns (0 after a failure, which is recorded)."""
        size = size or self.concurrency
        try:
            self._send(f"run {size}")
            _, elapsed, ok, cpu = self._reply().split()
        except Exception as exc:
            self.error = f"n/a (error: {exc})"
            return 0
        if int(ok) != size:
            self.error = f"n/a (wrong result: {ok} of {size} calls answered)"
        self.last_cpu = int(cpu)
        return int(elapsed)

    def finish(self) -> None:
        if self.process.poll() is not None:
            return
        try:
            self._send("quit")
            self.max_rss_kb = int(self._reply(30).split()[1])
        except Exception as exc:
            self.error = self.error or f"n/a (error: {exc})"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("lib")
    parser.add_argument("wire")
    parser.add_argument("port", type=int)
    parser.add_argument("concurrency", type=int)
    parser.add_argument("--max-seconds", type=int, default=900)
    args = parser.parse_args()
    signal.alarm(args.max_seconds)
    serve(args.lib, args.wire, args.port, args.concurrency)


if __name__ == "__main__":
    main()
