"""The one error the CLI reports as a line, not a traceback: the user asked for something wrong."""

from __future__ import annotations


class UsageError(Exception):
    """A bad model string, a missing key, tools that do not load: the message says what to fix."""
