"""A test kit for advisor authors: run one advisor in all four modes and compare.

``check_advisor`` builds a fresh client per mode around a :class:`ScriptedChatModel`, runs
``call``, ``stream``, ``acall`` and ``astream``, and asserts that the model received the same
prompts and that the (aggregated) replies agree. It returns the four runs for further checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._sync import run_sync
from ..advisor import Advisor, ChatClientResponse
from ..client import ChatClient, ChatClientRequestSpec
from ..events import StreamEvent
from ..prompt import Prompt
from ..tools.resolve import ToolLike
from .scripted import ScriptedChatModel, ScriptItem

__all__ = ["MODES", "ModeRun", "check_advisor", "run_in_mode", "run_spec"]

MODES = ("call", "stream", "acall", "astream")


@dataclass
class ModeRun:
    """One run: the final reply, the stream's events (empty for calls), and what the model received."""

    mode: str
    response: ChatClientResponse
    prompts: list[Prompt]
    events: list[StreamEvent] = field(default_factory=list)

    @property
    def text(self) -> str | None:
        chat = self.response.chat_response
        return chat.text if chat is not None else None


def run_in_mode(
    mode: str,
    advisors: Sequence[Advisor],
    script: Sequence[ScriptItem] | Callable[[Prompt], ScriptItem],
    *,
    user: str = "Hello",
    system: str | None = None,
    tools: Iterable[ToolLike] = (),
    params: Mapping[str, Any] | None = None,
) -> ModeRun:
    """Run one request in ``mode`` through a fresh client with ``advisors`` and a scripted model."""
    model = ScriptedChatModel(script)
    spec = ChatClient.create(model).prompt().user(user).tools(*tools).advisors(*advisors, params=params)
    if system is not None:
        spec = spec.system(system)
    response, events = run_spec(mode, spec)
    return ModeRun(mode, response, model.prompts, events)


def run_spec(mode: str, spec: ChatClientRequestSpec) -> tuple[ChatClientResponse, list[StreamEvent]]:
    """Run ``spec`` in ``mode``: the final response, and the events when it streams."""
    if mode == "call":
        return spec.call().chat_client_response(), []
    if mode == "acall":
        return run_sync(spec.acall().chat_client_response), []
    if mode == "stream":
        stream = spec.stream()
        events = list(stream.events())
        return stream.response, events
    if mode == "astream":
        astream = spec.astream()

        async def collect() -> list[StreamEvent]:
            return [event async for event in astream.events()]

        events = run_sync(collect)
        return astream.response, events
    raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")


def _prompt_view(prompt: Prompt) -> tuple[Any, ...]:
    options = prompt.options.model_dump() if prompt.options is not None else None
    return tuple(m.model_dump() for m in prompt.messages), options


def check_advisor(
    advisor_factory: Callable[[], Advisor | Sequence[Advisor]],
    script: Sequence[ScriptItem] | Callable[[Prompt], ScriptItem],
    *,
    user: str = "Hello",
    system: str | None = None,
    tools: Iterable[ToolLike] = (),
    params: Mapping[str, Any] | None = None,
) -> dict[str, ModeRun]:
    """Run the advisor(s) made by ``advisor_factory`` in every mode and assert they agree.

    Compared across modes: the prompts the model received (messages and options), the reply's
    text, finish reasons and usage. Raises ``AssertionError`` naming the first mode that differs.
    """
    tools = tuple(tools)
    runs: dict[str, ModeRun] = {}
    for mode in MODES:
        made = advisor_factory()
        advisors = list(made) if isinstance(made, Sequence) else [made]
        runs[mode] = run_in_mode(mode, advisors, script, user=user, system=system, tools=tools, params=params)
    reference = runs["call"]
    for mode, run in runs.items():
        expected = [_prompt_view(p) for p in reference.prompts]
        got = [_prompt_view(p) for p in run.prompts]
        assert got == expected, f"{mode}: the model received different prompts than in call mode"
        assert run.text == reference.text, f"{mode}: reply text {run.text!r} != {reference.text!r}"
        assert _summary(run) == _summary(reference), f"{mode}: finish reasons or usage differ from call mode"
    return runs


def _summary(run: ModeRun) -> tuple[Any, ...]:
    chat = run.response.chat_response
    if chat is None:
        return (None,)
    return tuple(g.finish_reason for g in chat.generations), chat.metadata.usage
