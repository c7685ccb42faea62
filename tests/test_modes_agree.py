"""Property: the final response an advisor or the caller sees is the same in all four modes.

Scripted turns mix text, tool rounds, ``return_direct`` tools, tool-call limits and confirmation
pauses (resumed with decisions); every mode must end with the same text, finish reasons, usage,
message metadata, turn messages and pending state.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisors import ToolCallingAdvisor
from chatclient import (
    AdvisorOrder,
    AssistantMessage,
    BaseAdvisor,
    ChatClient,
    ChatClientResponse,
    ToolCall,
    ToolCallDecision,
    ToolCallDecisions,
    Usage,
    awaiting_decision,
    tool,
)
from chatclient.testing import MODES, ScriptedChatModel
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools import ToolCallingManager
from chatclient.turn import turn_of

USAGE = Usage(prompt_tokens=7, completion_tokens=3, reasoning_tokens=1)


class Tools:
    @tool(description="Plain lookup")
    def lookup(self, key: str) -> str:
        return f"value of {key}"

    @tool(description="Answer directly", return_direct=True)
    def direct(self, key: str) -> str:
        return f"direct {key}"

    @tool(description="Needs a person", requires_confirmation=True)
    def gated(self, key: str) -> str:
        return f"gated {key}"


class Seen(BaseAdvisor):
    """Outside the loop: keeps the final response it was given."""

    order = AdvisorOrder.MEMORY

    def __init__(self) -> None:
        self.final: list[ChatClientResponse] = []

    def after(self, response: ChatClientResponse) -> ChatClientResponse:
        self.final.append(response)
        return response


texts = st.one_of(st.none(), st.text(alphabet="abc xyz.", min_size=1, max_size=12))
metadata: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.just({}), st.fixed_dictionaries({"reasoning": st.text(alphabet="rst", max_size=6)})
)
tool_names = st.sampled_from(["lookup", "direct", "gated", "missing"])


@st.composite
def scripts(draw: Any) -> list[AssistantMessage]:
    rounds = draw(st.integers(min_value=0, max_value=4))
    script: list[AssistantMessage] = []
    counter = 0
    for _ in range(rounds):
        names = draw(st.lists(tool_names, min_size=1, max_size=3))
        calls = []
        for name in names:
            counter += 1
            calls.append(ToolCall(id=f"c{counter}", name=name, arguments=f'{{"key": "k{counter % 3}"}}'))
        script.append(AssistantMessage(draw(texts), tool_calls=calls, metadata=draw(metadata)))
    script.append(AssistantMessage(draw(texts) or "done.", metadata=draw(metadata)))
    # Spare replies: a resume or a limit's last round may need one more.
    script.extend(AssistantMessage(f"spare {i}.") for i in range(3))
    return script


def summary(response: ChatClientResponse) -> tuple[Any, ...]:
    chat = response.chat_response
    assert chat is not None
    pending = awaiting_decision(response)
    turn = turn_of(response)
    assert turn is not None
    return (
        chat.text,
        [g.finish_reason for g in chat.generations],
        [g.output.metadata for g in chat.generations],
        [c.model_dump() for c in chat.tool_calls],
        chat.usage,
        {k: v for k, v in chat.metadata.extra.items() if k != "pending_tool_calls"},
        [m.model_dump() for m in turn.messages],
        turn.rounds,
        turn.paused,
        None if pending is None else ([c.model_dump() for c in pending.calls], pending.turn_start, pending.round),
    )


def run_turn(mode: str, script: list[AssistantMessage]) -> tuple[tuple[Any, ...], ...]:
    seen = Seen()
    manager = ToolCallingManager.builder().max_total_tool_calls(4).build()
    client = (
        ChatClient.builder(ScriptedChatModel(script, usage=USAGE, text_chunk_size=3, argument_chunks=2))
        .default_tools(Tools())
        .default_advisors(seen)
        .tool_calling_advisor(ToolCallingAdvisor(manager))
        .build()
    )
    response, _ = run_spec(mode, client.prompt("Go"))
    results = [summary(response)]
    assert seen.final[-1] is response or summary(seen.final[-1]) == results[-1]
    pending = awaiting_decision(response)
    if pending is not None:
        decisions = ToolCallDecisions.of(
            ToolCallDecision.allow(c.id) if i % 2 == 0 else ToolCallDecision.deny(c.id, "no")
            for i, c in enumerate(pending.calls)
        )
        resumed, _ = run_spec(mode, client.prompt().resume(pending, decisions))
        results.append(summary(resumed))
        assert summary(seen.final[-1]) == results[-1]
    return tuple(results)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_every_mode_ends_with_the_same_final_response(script: list[AssistantMessage]) -> None:
    reference = run_turn("call", script)
    for mode in MODES[1:]:
        assert run_turn(mode, script) == reference, f"{mode} differs from call"
