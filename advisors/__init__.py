"""Built-in advisors. ``ToolCallingAdvisor`` runs the tool loop and is auto-registered by the client."""

from .logging import SimpleLoggerAdvisor
from .safeguard import SafeGuardAdvisor
from .structured_output import StructuredOutputValidationAdvisor
from .tool_calling import LoopState, ToolCallingAdvisor

__all__ = ["LoopState", "SafeGuardAdvisor", "SimpleLoggerAdvisor", "ToolCallingAdvisor"]
__all__ += ["StructuredOutputValidationAdvisor"]
