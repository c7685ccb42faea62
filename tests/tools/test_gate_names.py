"""Gates by name hold whichever name of a tool is configured (its exposed name or an alias), and a
gated name that matches no tool of a request is reported, not silently ignored."""

from __future__ import annotations

import warnings

import pytest

from chatclient.tools import (
    ConfirmationSettings,
    FunctionToolCallback,
    ToolCallConfirmationPolicy,
    ToolCallConfirmationRequired,
    ToolCallingManager,
    ToolMetadata,
    ToolSpec,
    UnmatchedToolNameWarning,
)

from .helpers import call, prompt, reply


def renamed_tool(runs: list[str]) -> FunctionToolCallback:
    """A tool the model sees as ``delete_city_1a2b`` that also answers to ``delete.city``."""

    def delete(city: str) -> str:
        runs.append(city)
        return f"deleted {city}"

    return FunctionToolCallback(
        ToolSpec(delete, name="delete_city_1a2b", metadata=ToolMetadata(aliases=("delete.city",)))
    )


def manager_with(policy: ToolCallConfirmationPolicy) -> ToolCallingManager:
    return ToolCallingManager.builder().tool_call_confirmation_policy(policy).build()


POLICIES = {
    "by_tool_names": lambda name: ToolCallConfirmationPolicy.by_tool_names(name),
    "settings": lambda name: ToolCallConfirmationPolicy.default(ConfirmationSettings(True, frozenset({name}))),
    "environment": lambda name: ToolCallConfirmationPolicy.default(
        ConfirmationSettings.parse({ConfirmationSettings.TOOLS_ENV: f" {name} ,"})
    ),
}


@pytest.mark.parametrize("where", POLICIES)
@pytest.mark.parametrize("name", ["delete_city_1a2b", "delete.city"])
def test_a_gate_by_either_name_pauses_the_call(where: str, name: str) -> None:
    runs: list[str] = []
    manager = manager_with(POLICIES[where](name))
    with pytest.raises(ToolCallConfirmationRequired) as paused:
        manager.execute_tool_calls(
            prompt([renamed_tool(runs)]), reply(call("delete_city_1a2b", '{"city": "Paris"}', id="c1"))
        )
    assert paused.value.awaiting_ids == ["c1"]
    assert runs == []


@pytest.mark.parametrize("where", POLICIES)
def test_a_gated_name_no_tool_answers_to_is_reported_with_its_source(where: str) -> None:
    runs: list[str] = []
    manager = manager_with(POLICIES[where]("delete_cty"))
    with pytest.warns(UnmatchedToolNameWarning, match=r"'delete_cty'") as caught:
        manager.execute_tool_calls(prompt([renamed_tool(runs)]), reply(call("delete_city_1a2b", '{"city": "Rome"}')))
    source = "ToolCallConfirmationPolicy.by_tool_names" if where == "by_tool_names" else ConfirmationSettings.TOOLS_ENV
    assert any(source in str(w.message) for w in caught)
    assert runs == ["Rome"], "the misspelt gate held nothing: the warning is all that says so"


def test_a_name_that_matches_an_alias_is_not_reported() -> None:
    runs: list[str] = []
    manager = manager_with(ToolCallConfirmationPolicy.by_tool_names("delete.city") | ToolCallConfirmationPolicy.never())
    tools = prompt([renamed_tool(runs)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ToolCallConfirmationRequired):
            manager.execute_tool_calls(tools, reply(call("delete_city_1a2b", '{"city": "Oslo"}')))
    assert runs == []


def test_a_combined_policy_reports_the_unmatched_names_of_each_part() -> None:
    policy = ToolCallConfirmationPolicy.by_tool_names("a", "delete.city") | ToolCallConfirmationPolicy.default(
        ConfirmationSettings(True, frozenset({"b"}))
    )
    with pytest.warns(UnmatchedToolNameWarning) as caught:
        policy.check_tool_names([renamed_tool([])])
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert ConfirmationSettings.TOOLS_ENV in messages[0] and "gates tool name(s) ['b'] " in messages[0]
    assert "by_tool_names('a', 'delete.city') gates tool name(s) ['a'] " in messages[1]
