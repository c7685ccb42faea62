"""What the model is told about a tool, and what the loop knows about it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = ["Confirmation", "ToolContext", "ToolDefinition", "ToolMetadata", "check_timeout"]

Confirmation = bool | str | Callable[[Any], bool]
"""``@tool(requires_confirmation=...)``: ``True``, a role the approver must hold, or a predicate over
the ``DecisionRequest`` that says whether the approver may decide."""


def _no_arguments_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolDefinition(BaseModel):
    """Name, description and JSON schema of the arguments: exactly what a provider sends."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    name: str
    description: str
    input_schema: dict[str, JsonValue] = Field(default_factory=_no_arguments_schema)


class ToolMetadata(BaseModel):
    """Behaviour flags the loop reads; never sent to the model."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    return_direct: bool = False
    """The tool's result is the answer: the loop returns it without asking the model again."""
    requires_confirmation: bool = False
    """A person must allow each call before it runs (see tool call confirmation)."""
    approved_by: str | Callable[[Any], bool] | None = None
    """Who may decide on a call: a role the approver must hold, or a predicate over the
    ``DecisionRequest``; ``None`` lets anyone decide (see ``ToolCallAuthorizer``)."""
    idempotent: bool = False
    """Running a call twice does no more than running it once: after a crash left a call "started,
    outcome unknown", it may simply run again (any other is reported to the model as unknown)."""
    aliases: tuple[str, ...] = ()
    """Other names of the tool that a gate by name also matches (``by_tool_names``, the
    ``CHATCLIENT_TOOL_CONFIRMATION_TOOLS`` setting): a remote tool's own name where the model sees a
    sanitised or prefixed one, so a gate holds whichever name a person configures. Never sent."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds a call may run before it is abandoned and the model told it timed out; replaces the
    manager's default ``tool_timeout`` for this tool, and a request's ``timeout`` still caps it."""
    max_retries: int | None = Field(default=None, ge=0)
    """How often per turn the tool may raise ``ToolRetry`` to ask for a corrected call; ``None``:
    the manager's limits decide (``ToolCallLimits.max_tool_retries``)."""

    @classmethod
    def of(
        cls,
        *,
        return_direct: bool = False,
        requires_confirmation: Confirmation = False,
        timeout: float | None = None,
        max_retries: int | None = None,
        idempotent: bool = False,
    ) -> ToolMetadata:
        """Metadata from ``@tool``'s flags: ``requires_confirmation`` may be a role or a predicate."""
        check_timeout(timeout)
        if max_retries is not None and (
            isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0
        ):
            raise ValueError(f"max_retries is a number of retries (0 or more), not {max_retries!r}")
        if isinstance(requires_confirmation, bool):
            return cls(return_direct=return_direct, requires_confirmation=requires_confirmation,
                       timeout=timeout, max_retries=max_retries, idempotent=idempotent)  # fmt: skip
        if isinstance(requires_confirmation, str) and not requires_confirmation.strip():
            raise ValueError("requires_confirmation names a role: give a non-empty role name")
        if not isinstance(requires_confirmation, str) and not callable(requires_confirmation):
            raise TypeError(
                f"requires_confirmation is True/False, a role name or a predicate, not {requires_confirmation!r}"
            )
        return cls(return_direct=return_direct, requires_confirmation=True, approved_by=requires_confirmation,
                   timeout=timeout, max_retries=max_retries, idempotent=idempotent)  # fmt: skip


def check_timeout(timeout: float | None) -> None:
    """Refuse a tool timeout that is not a positive number of seconds, naming it."""
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"a tool's timeout is a positive number of seconds, not {timeout!r}")


class ToolContext(Mapping[str, Any]):
    """Read-only values the application hands to tools (user id, a database handle, ...).

    Declare a parameter of this type on a tool to receive it; it never appears in the schema the
    model sees and the model cannot set it.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(data) if data else {}

    @property
    def context(self) -> Mapping[str, Any]:
        """The values, read-only (one empty context is shared by every call that has none)."""
        return MappingProxyType(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ToolContext({self._data!r})"


EMPTY_TOOL_CONTEXT = ToolContext()
"""The context of a call that has none: shared, as nothing can change it (``context`` is read-only)."""
