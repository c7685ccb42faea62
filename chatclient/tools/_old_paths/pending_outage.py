"""Moved to :mod:`chatclient.pending.outage`; this path works for one more release, with a DeprecationWarning."""

from chatclient._lazy import moved_module

moved_module("chatclient.tools.pending_outage", "chatclient.pending.outage")
