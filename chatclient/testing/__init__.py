"""Test doubles and kits that ship with chatclient: use them in your own tests.

- :class:`ScriptedChatModel` replies from a script (and streams like a real provider);
- :func:`tool_call` makes a ``ToolCall`` for a script;
- :func:`check_advisor` runs an advisor in call/stream/acall/astream and checks they agree.
"""

from .advisor_kit import MODES, ModeRun, check_advisor, run_in_mode
from .scripted import ScriptedChatModel, ScriptItem, tool_call

__all__ = ["MODES", "ModeRun", "ScriptItem", "ScriptedChatModel", "check_advisor", "run_in_mode", "tool_call"]
