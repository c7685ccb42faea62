"""Run one action from several threads at once and keep what each got: its result or its exception
(for "of two concurrent retries, exactly one goes on" tests; the stores' barriers make them meet)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def race(action: Callable[[], object], runners: int = 2) -> list[object]:
    outcomes: list[object] = []

    def run() -> None:
        try:
            outcomes.append(action())
        except Exception as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=run) for _ in range(runners)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
