"""Benchmarks: chatclient against raw httpx2 and its peers. Run with ``make bench`` / ``make bench-quick``.

Not part of the installed package and not run by ``make test`` (a smoke test keeps the harness working).
"""
