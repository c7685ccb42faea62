"""Moved to :mod:`chatclient.pending.postgres`; this path works for one more release, with a DeprecationWarning."""

from chatclient._lazy import moved_module

moved_module("chatclient.tools.pending_postgres", "chatclient.pending.postgres")
