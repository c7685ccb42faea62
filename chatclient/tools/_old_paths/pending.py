"""Moved to :mod:`chatclient.pending.state`; this path works for one more release, with a DeprecationWarning."""

from chatclient._lazy import moved_module

moved_module("chatclient.tools.pending", "chatclient.pending.state")
