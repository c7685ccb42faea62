"""Per-turn tool-call limits: per tool, total and identical calls, under both policies."""

from __future__ import annotations

import json
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatclient.errors import ConfigurationError, ToolCallLimitExceededError
from chatclient.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatclient.tools import ToolCallingManager, ToolCallLimitPolicy, tool
from chatclient.tools._limits import ToolCallLimits, canonical_arguments

from .helpers import call, prompt, reply

RUNS: list[str] = []


@tool
def search(query: str) -> str:
    RUNS.append(f"search:{query}")
    return f"results for {query}"


@tool
def clock() -> str:
    RUNS.append("clock")
    return "12:00"


@pytest.fixture(autouse=True)
def _reset_runs() -> None:
    RUNS.clear()


def searches(*queries: str) -> list[ToolCall]:
    return [call("search", json.dumps({"query": q}), id=f"s{n}_{q}") for n, q in enumerate(queries, 1)]


def manager(policy: ToolCallLimitPolicy = ToolCallLimitPolicy.FINAL_ANSWER) -> ToolCallingManager:
    return (
        ToolCallingManager.builder()
        .max_calls_per_tool(2)
        .max_total_tool_calls(3)
        .max_identical_calls(1)
        .on_limit_exceeded(policy)
        .build()
    )


def round_of(*calls: ToolCall) -> list[Message]:
    """One earlier round of the turn: the calls and their results."""
    return [
        AssistantMessage(None, tool_calls=list(calls)),
        ToolResponseMessage([ToolResponse(id=c.id, name=c.name, response_data="r") for c in calls]),
    ]


PER_TOOL = "Tool call limit (2) exceeded for tool 'search'. No further calls to this tool are allowed in this turn."
TOTAL = "Total tool call limit (3) exceeded for this turn. No further tool calls are allowed."
IDENTICAL = (
    "Identical call to tool 'search' repeated 1 times in this turn; not running it again. "
    "Use the results you already have."
)


class TestFinalAnswerPolicy:
    def test_per_tool_limit_runs_the_calls_within_and_refuses_the_rest(self) -> None:
        result = manager().execute_tool_calls(prompt([search, clock]), reply(*searches("a", "b", "c")))
        assert sorted(RUNS) == sorted(["search:a", "search:b"])
        assert [(r.response_data, r.is_error) for r in result.tool_responses] == [
            ("results for a", False),
            ("results for b", False),
            (PER_TOOL, True),
        ]
        assert result.limit_exceeded == PER_TOOL

    def test_total_limit(self) -> None:
        calls = [*searches("a", "b"), call("clock", id="k1"), call("clock", "{ }", id="k2")]
        result = manager().execute_tool_calls(prompt([search, clock]), reply(*calls))
        assert sorted(RUNS) == sorted(["search:a", "search:b", "clock"])
        assert result.tool_responses[-1].response_data == TOTAL
        assert result.limit_exceeded == TOTAL

    def test_identical_calls_compare_canonical_arguments(self) -> None:
        calls = [call("search", '{"query": "a"}', id="x1"), call("search", '{ "query":"a" }', id="x2")]
        result = manager().execute_tool_calls(prompt([search]), reply(*calls))
        assert sorted(RUNS) == sorted(["search:a"])
        assert [r.response_data for r in result.tool_responses] == ["results for a", IDENTICAL]
        assert result.limit_exceeded == IDENTICAL

    def test_first_breach_is_reported_and_later_calls_still_checked(self) -> None:
        calls = [*searches("a", "b", "c"), call("clock"), call("clock", id="k2")]
        result = manager().execute_tool_calls(prompt([search, clock]), reply(*calls))
        assert sorted(RUNS) == sorted(["search:a", "search:b", "clock"])
        assert result.limit_exceeded == PER_TOOL
        assert [r.response_data for r in result.tool_responses][-1] == TOTAL
        assert result.return_direct is False


class TestRaisePolicy:
    @pytest.mark.parametrize(
        ("calls", "kind", "limit", "message"),
        [
            (searches("a", "b", "c"), "per_tool", 2, PER_TOOL),
            ([*searches("a", "b"), call("clock"), call("clock", id="k2")], "total", 3, TOTAL),
            (searches("a", "a"), "identical", 1, IDENTICAL),
        ],
        ids=["per_tool", "total", "identical"],
    )
    def test_breach_raises_before_any_call_runs(
        self, calls: list[ToolCall], kind: str, limit: int, message: str
    ) -> None:
        with pytest.raises(ToolCallLimitExceededError) as info:
            manager(ToolCallLimitPolicy.RAISE).execute_tool_calls(prompt([search, clock]), reply(*calls))
        assert RUNS == []
        error = info.value
        assert (str(error), error.kind, error.limit) == (message, kind, limit)
        assert error.tool_name == calls[-1].name and error.call_id == calls[-1].id

    async def test_async_path_raises_too(self) -> None:
        with pytest.raises(ToolCallLimitExceededError, match="Tool call limit"):
            await manager(ToolCallLimitPolicy.RAISE).aexecute_tool_calls(
                prompt([search]), reply(*searches("a", "b", "c"))
            )
        assert RUNS == []


class TestTurns:
    def test_calls_of_earlier_rounds_of_the_turn_count(self) -> None:
        history = [UserMessage("find things"), *round_of(*searches("a")), *round_of(call("clock"))]
        result = manager().execute_tool_calls(prompt([search, clock], history=history), reply(*searches("b", "c")))
        assert sorted(RUNS) == sorted(["search:b"])
        assert result.tool_responses[1].response_data == PER_TOOL

    def test_identical_call_from_an_earlier_round_is_refused(self) -> None:
        history = [UserMessage("find"), *round_of(*searches("a"))]
        result = manager().execute_tool_calls(prompt([search], history=history), reply(*searches("a")))
        assert RUNS == []
        assert result.limit_exceeded == IDENTICAL

    def test_a_new_user_message_starts_a_new_turn(self) -> None:
        history = [
            UserMessage("first question"),
            *round_of(*searches("a", "b")),
            AssistantMessage("answer"),
            UserMessage("second question"),
        ]
        result = manager().execute_tool_calls(prompt([search], history=history), reply(*searches("a", "b")))
        assert sorted(RUNS) == sorted(["search:a", "search:b"])
        assert result.limit_exceeded is None


class TestConfiguration:
    def test_override_for_one_tool(self) -> None:
        m = ToolCallingManager.builder().max_calls_for_tool("search", 1).max_identical_calls(10).build()
        result = m.execute_tool_calls(prompt([search, clock]), reply(*searches("a", "b"), call("clock")))
        assert sorted(RUNS) == sorted(["search:a", "clock"])
        assert result.limit_exceeded is not None and "Tool call limit (1)" in result.limit_exceeded

    def test_excluded_tool_has_no_per_tool_limit_but_counts_towards_the_total(self) -> None:
        m = (
            ToolCallingManager.builder()
            .max_calls_per_tool(1)
            .exclude_tool_from_limit("clock")
            .max_identical_calls(10)
            .max_total_tool_calls(3)
            .build()
        )
        calls = [call("clock", id=f"k{i}") for i in range(4)]
        result = m.execute_tool_calls(prompt([clock]), reply(*calls))
        assert sorted(RUNS) == sorted(["clock"] * 3)
        assert result.tool_responses[-1].response_data == TOTAL

    def test_defaults(self) -> None:
        limits = ToolCallingManager.builder().build().limits
        assert (limits.max_calls_per_tool, limits.max_total_tool_calls, limits.max_identical_calls) == (
            40,
            150,
            3,
        )
        assert limits.policy is ToolCallLimitPolicy.FINAL_ANSWER

    def test_negative_limits_are_rejected(self) -> None:
        with pytest.raises(ConfigurationError, match="max_total_tool_calls must not be negative"):
            ToolCallingManager.builder().max_total_tool_calls(-1)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(), json_values, max_size=5), st.randoms())
def test_canonical_arguments_ignore_key_order_and_spacing(arguments: dict[str, object], rnd: Random) -> None:
    items = list(arguments.items())
    rnd.shuffle(items)
    reordered = json.dumps(dict(items), indent=2)
    assert canonical_arguments(reordered) == canonical_arguments(json.dumps(arguments))


def test_canonical_arguments_of_blank_and_invalid_text() -> None:
    assert canonical_arguments("  ") == "{}"
    assert canonical_arguments("{nope") == "{nope"


def _counted_from_scratch(limits: ToolCallLimits, history: list[Message], calls: list[ToolCall]) -> list[str | None]:
    """The breach kind of each call, counting the whole turn for every call (no shortcut)."""
    turn: list[ToolCall] = []
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            turn.extend(message.tool_calls)
    kinds: list[str | None] = []
    for c in calls:
        per_tool = sum(1 for t in turn if t.name == c.name)
        key = (c.name, canonical_arguments(c.arguments))
        same = sum(1 for t in turn if (t.name, canonical_arguments(t.arguments)) == key)
        limit = limits.max_calls_for_tool.get(c.name, limits.max_calls_per_tool)
        if c.name not in limits.excluded_tools and per_tool >= limit:
            kinds.append("per_tool")
        elif len(turn) >= limits.max_total_tool_calls:
            kinds.append("total")
        elif same >= limits.max_identical_calls:
            kinds.append("identical")
        else:
            kinds.append(None)
            turn.append(c)
    return kinds


_names = st.sampled_from(["search", "clock"])
_calls = st.lists(st.builds(lambda n, q: call(n, json.dumps({"q": q})), _names, st.integers(0, 2)), max_size=6)


@given(
    st.lists(_calls, max_size=4),
    _calls,
    st.integers(0, 5),
    st.integers(0, 8),
    st.integers(0, 4),
    st.dictionaries(_names, st.integers(0, 4), max_size=1),
    st.frozensets(_names, max_size=1),
)
def test_a_turn_within_every_limit_is_decided_as_counting_it_call_by_call_decides(
    rounds: list[list[ToolCall]],
    calls: list[ToolCall],
    per_tool: int,
    total: int,
    identical: int,
    for_tool: dict[str, int],
    excluded: frozenset[str],
) -> None:
    """The check skips counting when the turn's calls cannot reach the lowest limit; at and past that
    boundary it gives what counting every call gives."""
    limits = ToolCallLimits(max_calls_per_tool=per_tool, max_total_tool_calls=total, max_identical_calls=identical,
                            max_calls_for_tool=for_tool, excluded_tools=excluded)  # fmt: skip
    history: list[Message] = [UserMessage("earlier"), AssistantMessage(None, tool_calls=[call("search", id="old")])]
    history.append(UserMessage("hi"))
    for earlier in rounds:
        if earlier:
            history.append(AssistantMessage(None, tool_calls=earlier))
    got = [None if b is None else b.kind for b in limits.check(history, calls)]
    assert got == _counted_from_scratch(limits, history, calls)
