"""Built-in advisors. ``ToolCallingAdvisor`` runs the tool loop and is auto-registered by the client.

The retrieval advisors load on first use (``advisors.QuestionAnswerAdvisor``), so the client, which
imports the tool loop from here, does not load the retrieval SPI with it."""

import typing as _typing

from chatclient._lazy import lazy_exports as _lazy_exports

from .logging import SimpleLoggerAdvisor
from .safeguard import SafeGuardAdvisor
from .structured_output import StructuredOutputValidationAdvisor
from .tool_calling import LoopState, ToolCallingAdvisor

__all__ = ["LoopState", "SafeGuardAdvisor", "SimpleLoggerAdvisor", "ToolCallingAdvisor"]
__all__ += ["StructuredOutputValidationAdvisor"]
__all__ += ["QuestionAnswerAdvisor", "RetrievalAugmentationAdvisor", "retriever_tool"]

if _typing.TYPE_CHECKING:
    from .question_answer import QuestionAnswerAdvisor
    from .rag import RetrievalAugmentationAdvisor
    from .retriever import retriever_tool

__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".question_answer": ["QuestionAnswerAdvisor"],
        ".rag": ["RetrievalAugmentationAdvisor"],
        ".retriever": ["retriever_tool"],
    },
)
