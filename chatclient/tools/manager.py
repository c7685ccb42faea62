"""``ToolCallingManager``: runs the tool calls of one model reply and returns the grown conversation.

Each batch is first *planned* (tools looked up, limits checked: nothing has run yet, so a batch can be
refused or paused as a whole) and then *run* (concurrently, results in the reply's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from typing_extensions import Self

from ..errors import (
    ChatClientError,
    ConfigurationError,
    ToolCallLimitExceededError,
    ToolError,
    UnknownToolError,
)
from ..messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage
from ..responses import ChatResponse, FinishReason, Generation, GenerationMetadata
from ._execution import Invocation, Outcome, arun_all, run_all, tool_execution_error
from ._limits import ToolCallLimitPolicy, ToolCallLimits
from ._processor import DefaultToolExceptionProcessor, ToolExceptionProcessor
from .callback import ToolCallback
from .definition import ToolContext, ToolDefinition

if TYPE_CHECKING:
    from ..options import ToolCallingChatOptions
    from ..prompt import Prompt

__all__ = ["ToolCallingManager", "ToolCallingManagerBuilder", "ToolExecutionResult"]


@dataclass(frozen=True)
class ToolExecutionResult:
    """The conversation after one batch of tool calls, and what the loop should do next."""

    conversation_history: tuple[Message, ...]
    """The prompt's messages, the assistant message with the calls, and one ``ToolResponseMessage``."""
    return_direct: bool = False
    """Every call of the batch is a ``return_direct`` tool that succeeded: the results are the answer."""
    limit_exceeded: str | None = None
    """The first breach message when a limit was hit under ``FINAL_ANSWER``: the loop should ask the
    model once more, without tools."""

    @property
    def tool_responses(self) -> tuple[ToolResponse, ...]:
        """The responses of the last ``ToolResponseMessage`` (this batch's)."""
        for message in reversed(self.conversation_history):
            if isinstance(message, ToolResponseMessage):
                return message.responses
        return ()

    def build_generations(self) -> tuple[Generation, ...]:
        """One generation per tool result, for returning ``return_direct`` results as the reply."""
        return tuple(
            Generation(
                AssistantMessage(response.response_data),
                GenerationMetadata(
                    finish_reason=FinishReason.RETURN_DIRECT,
                    extra={"tool_id": response.id, "tool_name": response.name},
                ),
            )
            for response in self.tool_responses
        )


@dataclass(frozen=True)
class _Step:
    call: ToolCall
    target: ToolCallback | ToolError
    """The tool to run, or the error decided while planning (over a limit, unknown tool)."""


@dataclass(frozen=True)
class _Plan:
    message: AssistantMessage
    steps: tuple[_Step, ...]
    context: ToolContext
    limit_exceeded: str | None

    def invocations(self) -> list[Invocation]:
        return [
            Invocation(step.target, step.call.arguments, self.context)
            for step in self.steps
            if isinstance(step.target, ToolCallback)
        ]


class ToolCallingManager:
    """Executes the tool calls of a model reply: concurrently, within per-turn limits, with failures
    reported to the model (by default) so it can correct itself.

    Stateless and thread-safe: limits are counted from the prompt, so one manager serves every request.
    """

    def __init__(
        self,
        *,
        limits: ToolCallLimits | None = None,
        exception_processor: ToolExceptionProcessor | None = None,
        executor: Executor | None = None,
    ) -> None:
        """``executor`` runs sync tools in the sync path (default: a shared pool of 64 threads)."""
        self._limits = limits or ToolCallLimits()
        self._exception_processor = exception_processor or DefaultToolExceptionProcessor()
        self._executor = executor

    @staticmethod
    def builder() -> ToolCallingManagerBuilder:
        return ToolCallingManagerBuilder()

    @property
    def limits(self) -> ToolCallLimits:
        return self._limits

    def resolve_tool_definitions(self, options: ToolCallingChatOptions) -> list[ToolDefinition]:
        return [callback.definition for callback in options.tool_callbacks]

    def execute_tool_calls(self, prompt: Prompt, chat_response: ChatResponse) -> ToolExecutionResult:
        """Run the calls of the first generation with tool calls; sync tools run in threads.

        ``prompt`` holds the conversation *before* ``chat_response`` (its tools and tool context are
        used). Raises ``ToolCallLimitExceededError`` under the ``RAISE`` policy before anything runs,
        and whatever the exception processor raises once the whole batch has finished.
        """
        plan = self._plan(prompt, chat_response)
        return self._finish(prompt, plan, run_all(plan.invocations(), self._executor))

    async def aexecute_tool_calls(self, prompt: Prompt, chat_response: ChatResponse) -> ToolExecutionResult:
        """As :meth:`execute_tool_calls`; async tools run as tasks, sync tools in worker threads."""
        plan = self._plan(prompt, chat_response)
        return self._finish(prompt, plan, await arun_all(plan.invocations()))

    def _plan(self, prompt: Prompt, chat_response: ChatResponse) -> _Plan:
        message = _tool_call_message(chat_response)
        breaches = self._limits.check(prompt.messages, message.tool_calls)
        callbacks = {callback.name: callback for callback in prompt.tool_callbacks}
        steps: list[_Step] = []
        limit_exceeded: str | None = None
        for call, breach in zip(message.tool_calls, breaches, strict=True):
            if breach is None:
                callback = callbacks.get(call.name)
                steps.append(_Step(call, callback if callback is not None else _unknown_tool(call, callbacks)))
                continue
            breach.call_id = call.id
            if self._limits.policy is ToolCallLimitPolicy.RAISE:
                raise breach
            limit_exceeded = limit_exceeded or str(breach)
            steps.append(_Step(call, breach))
        return _Plan(message, tuple(steps), _tool_context(prompt), limit_exceeded)

    def _finish(self, prompt: Prompt, plan: _Plan, ran: Sequence[Outcome]) -> ToolExecutionResult:
        outcomes = iter(ran)
        responses: list[ToolResponse] = []
        return_direct = True
        for step in plan.steps:
            call, target = step.call, step.target
            outcome = target if isinstance(target, ToolError) else next(outcomes)
            if isinstance(outcome, str):
                responses.append(ToolResponse(id=call.id, name=call.name, response_data=outcome))
                return_direct = return_direct and isinstance(target, ToolCallback) and target.metadata.return_direct
            else:
                text = self._error_text(call, outcome)
                responses.append(ToolResponse(id=call.id, name=call.name, response_data=text, is_error=True))
                return_direct = False
        history = (*prompt.messages, plan.message, ToolResponseMessage(responses))
        return ToolExecutionResult(history, return_direct, plan.limit_exceeded)

    def _error_text(self, call: ToolCall, error: Exception) -> str:
        if isinstance(error, ToolCallLimitExceededError):
            return str(error)  # the loop's own refusal, not a tool failure: no processor
        if not isinstance(error, ToolError):
            if isinstance(error, ChatClientError):
                raise error  # misconfiguration (say, a schema that cannot be built), not a tool failure
            cause = error
            error = tool_execution_error(call.name, cause)
            error.__cause__ = cause
        if error.call_id is None:
            error.call_id = call.id
        return self._exception_processor(error)


class ToolCallingManagerBuilder:
    """Fluent construction of a :class:`ToolCallingManager`, as in Spring AI."""

    def __init__(self) -> None:
        self._limits = ToolCallLimits()
        self._exception_processor: ToolExceptionProcessor = DefaultToolExceptionProcessor()
        self._executor: Executor | None = None

    def max_calls_per_tool(self, limit: int) -> Self:
        """Calls allowed per tool per turn (default 40)."""
        self._limits = replace(self._limits, max_calls_per_tool=limit)
        return self

    def max_calls_for_tool(self, name: str, limit: int) -> Self:
        self._limits = replace(self._limits, max_calls_for_tool={**self._limits.max_calls_for_tool, name: limit})
        return self

    def exclude_tool_from_limit(self, *names: str) -> Self:
        """Exempt tools from the per-tool limit (they still count towards the total)."""
        self._limits = replace(self._limits, excluded_tools=self._limits.excluded_tools | frozenset(names))
        return self

    def max_total_tool_calls(self, limit: int) -> Self:
        """Calls allowed per turn over all tools (default 150)."""
        self._limits = replace(self._limits, max_total_tool_calls=limit)
        return self

    def max_identical_calls(self, limit: int) -> Self:
        """Calls allowed per turn to one tool with the same arguments (default 3)."""
        self._limits = replace(self._limits, max_identical_calls=limit)
        return self

    def on_limit_exceeded(self, policy: ToolCallLimitPolicy) -> Self:
        self._limits = replace(self._limits, policy=policy)
        return self

    def exception_processor(self, processor: ToolExceptionProcessor) -> Self:
        self._exception_processor = processor
        return self

    def executor(self, executor: Executor) -> Self:
        self._executor = executor
        return self

    def build(self) -> ToolCallingManager:
        return ToolCallingManager(
            limits=self._limits, exception_processor=self._exception_processor, executor=self._executor
        )


def _tool_call_message(chat_response: ChatResponse) -> AssistantMessage:
    for generation in chat_response.generations:
        if generation.output.tool_calls:
            return generation.output
    raise ConfigurationError("No tool call requested by the chat model")


def _unknown_tool(call: ToolCall, callbacks: dict[str, ToolCallback]) -> UnknownToolError:
    available = list(callbacks)
    message = f"Unknown tool '{call.name}'. Available tools: {', '.join(available) or 'none'}."
    return UnknownToolError(message, tool_name=call.name, call_id=call.id, available=available)


def _tool_context(prompt: Prompt) -> ToolContext:
    # Imported here: ``options`` imports this package, so a module-level import would be circular.
    from ..options import ToolCallingChatOptions

    options = prompt.options
    return ToolContext(options.tool_context if isinstance(options, ToolCallingChatOptions) else None)
