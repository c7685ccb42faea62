"""The exact span tree and attributes of a plain call, a tool turn, a tool that raises, a pause with its
decisions and resume, in each of the four modes (call, stream, acall, astream)."""

from __future__ import annotations

from typing import Any

import pytest

from chatclient import (
    AssistantMessage,
    ChatClient,
    ToolCallDecision,
    ToolCallDecisions,
    awaiting_decision,
    tool,
)
from chatclient.testing import MODES, ScriptedChatModel, tool_call
from chatclient.testing.advisor_kit import run_spec
from chatclient.tools.confirmation import PendingToolCalls

from .conftest import Otel, tree

STREAMING = {"stream", "astream"}
LOOP = {"chatclient.advisor.name": "ToolCallingAdvisor", "chatclient.advisor.order": -2147483348}


class Tools:
    def __init__(self) -> None:
        self.booked = 0

    @tool(description="Get the weather of a city")
    def weather(self, city: str) -> str:
        return f"Sunny in {city}"

    @tool(description="Always fails")
    def broken(self, city: str) -> str:
        raise RuntimeError(f"no data for {city}")

    @tool(description="Book a flight", requires_confirmation=True)
    def book(self, flight: str) -> str:
        self.booked += 1
        return f"booked {flight}"


def agent(mode: str, **extra: Any) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "chatclient.stream": mode in STREAMING, **extra}


def chat(mode: str, n: int, reason: str, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "unknown"}
    if mode in STREAMING:
        attrs["gen_ai.request.stream"] = True
        attrs["gen_ai.response.time_to_first_chunk"] = "<set>"
    attrs.update({"gen_ai.response.id": "<set>", "gen_ai.response.model": "scripted"})
    attrs["gen_ai.response.finish_reasons"] = [reason]
    attrs.update(extra)
    return {"name": "chat", "kind": "CLIENT", "attributes": attrs}


def tool_span(name: str, call_id: str, **status: Any) -> dict[str, Any]:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    return {"name": f"execute_tool {name}", "kind": "INTERNAL", "attributes": {**attrs, **status}}


def loop(*children: dict[str, Any]) -> dict[str, Any]:
    return {"name": "advisor ToolCallingAdvisor", "kind": "INTERNAL", "attributes": LOOP, "children": list(children)}


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_call(otel: Otel, mode: str) -> None:
    client = ChatClient.builder(ScriptedChatModel(["Hello."])).observers(otel.observer()).build()
    response, _ = run_spec(mode, client.prompt("Hi"))
    assert response.text == "Hello."
    root_reply = {"gen_ai.response.id": "<set>", "gen_ai.response.model": "scripted"}
    assert otel.tree() == [
        {
            "name": "invoke_agent",
            "kind": "INTERNAL",
            "attributes": agent(mode, **root_reply, **{"gen_ai.response.finish_reasons": ["stop"]}),
            "children": [loop(chat(mode, 1, "stop"))],
        }
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_turn(otel: Otel, mode: str) -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="c1")]), "Sunny."]
    )
    client = ChatClient.builder(model).default_tools(Tools()).observers(otel.observer(agent_name="travel")).build()
    response, _ = run_spec(mode, client.prompt("Weather in Oslo?"))
    assert response.text == "Sunny."
    named = {"gen_ai.agent.name": "travel"}
    root_reply = {"gen_ai.response.id": "<set>", "gen_ai.response.model": "scripted"}
    weather = tool_span("weather", "c1")
    weather["attributes"].update(named)
    assert otel.tree() == [
        {
            "name": "invoke_agent travel",
            "kind": "INTERNAL",
            "attributes": {
                "gen_ai.operation.name": "invoke_agent",
                **named,
                "chatclient.stream": mode in STREAMING,
                **root_reply,
                "gen_ai.response.finish_reasons": ["stop"],
            },
            "children": [loop(chat(mode, 1, "tool_call"), weather, chat(mode, 2, "stop"))],
        }
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_that_raises_is_an_error_span_and_the_loop_goes_on(otel: Otel, mode: str) -> None:
    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("broken", {"city": "Oslo"}, id="c1")]), "No data."]
    )
    client = ChatClient.builder(model).default_tools(Tools()).observers(otel.observer()).build()
    response, _ = run_spec(mode, client.prompt("Weather in Oslo?"))
    assert response.text == "No data."
    failed = tool_span("broken", "c1", **{"error.type": "chatclient.errors.ToolExecutionError"})
    failed["status"] = "ERROR"
    [root] = otel.tree()
    assert root["children"] == [loop(chat(mode, 1, "tool_call"), failed, chat(mode, 2, "stop"))]
    assert "status" not in root  # the turn itself succeeded
    [span] = [s for s in otel.spans() if s.name == "execute_tool broken"]
    assert span.status.description is None  # the message is content: off by default


def _pause(otel: Otel, mode: str, tools: Tools, **observer: Any) -> tuple[ChatClient, PendingToolCalls]:
    model = ScriptedChatModel(
        [
            AssistantMessage(
                None,
                tool_calls=[
                    tool_call("weather", {"city": "Oslo"}, id="w1"),
                    tool_call("book", {"flight": "VX205"}, id="b1"),
                    tool_call("book", {"flight": "VX206"}, id="b2"),
                ],
            ),
            "Booked VX205.",
        ]
    )
    client = ChatClient.builder(model).default_tools(tools).observers(otel.observer(**observer)).build()
    paused, _ = run_spec(mode, client.prompt("Weather, then book both"))
    pending = awaiting_decision(paused)
    assert pending is not None
    return client, pending


DECISIONS = ToolCallDecisions.of(
    ToolCallDecision.allow("w1"),
    ToolCallDecision.allow("b1", approver="ana", reason="on budget"),
    ToolCallDecision.deny("b2", "Not that one.", approver="ana", reason="duplicate"),
)


@pytest.mark.parametrize("mode", MODES)
def test_a_pause_its_decisions_and_the_resume_linked_to_it(otel: Otel, mode: str) -> None:
    tools = Tools()
    client, pending = _pause(otel, mode, tools, capture_content=False)
    [paused_root] = otel.spans()[-1:]
    assert paused_root.name == "invoke_agent"
    assert set(pending.metadata) == {"traceparent"}

    # The state travels as JSON (another process would load it so), and the link with it.
    stored = PendingToolCalls.model_validate_json(pending.model_dump_json())
    otel.exporter.clear()
    resumed, _ = run_spec(mode, client.prompt().resume(stored, DECISIONS))
    assert resumed.text == "Booked VX205." and tools.booked == 1

    held = {
        "chatclient.confirmation.awaiting_call_ids": ["b1", "b2"],
        "chatclient.confirmation.held_call_ids": ["w1", "b1", "b2"],
    }
    paused_tree = tree([paused_root])[0]
    assert paused_tree == {
        "name": "invoke_agent",
        "kind": "INTERNAL",
        "attributes": {
            **agent(mode),
            "chatclient.confirmation.state": "awaiting",
            "chatclient.confirmation.id": "<set>",
            **held,
            "gen_ai.response.id": "<set>",
            "gen_ai.response.model": "scripted",
            "gen_ai.response.finish_reasons": ["tool_call"],
        },
        "events": [
            (
                "chatclient.tool_confirmation.requested",
                {
                    "chatclient.confirmation.id": "<set>",
                    **held,
                    "chatclient.confirmation.tool_names": ["weather", "book", "book"],
                    "chatclient.confirmation.expires_at": pending.expires_at,  # states expire by default
                },
            )
        ],
    }

    def decided(call_id: str, decision: str) -> tuple[str, dict[str, Any]]:
        return (
            "chatclient.tool_confirmation.decided",
            {
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.name": "book" if call_id != "w1" else "weather",
                "chatclient.confirmation.decision": decision,
                "chatclient.confirmation.decision.source": "explicit",
                **({"chatclient.confirmation.approver.id": "ana"} if call_id != "w1" else {}),
                "chatclient.confirmation.wait": "<set>",
            },
        )

    [root] = otel.tree()
    assert root["name"] == "invoke_agent"
    assert root["links"] == [{"chatclient.link.type": "resume"}]
    assert root["attributes"]["chatclient.confirmation.state"] == "resumed"
    assert root["events"] == [
        ("chatclient.tool_confirmation.resumed", {"chatclient.confirmation.id": "<set>"}),
        decided("w1", "allow"),
        decided("b1", "allow"),
        decided("b2", "deny"),
    ]
    # Only the calls that ran have a span: the denied one has its decided event and nothing else.
    assert root["children"] == [loop(tool_span("weather", "w1"), tool_span("book", "b1"), chat(mode, 2, "stop"))]

    [resume_span] = otel.spans()[-1:]
    [link] = resume_span.links
    assert link.context.trace_id == paused_root.context.trace_id
    assert link.context.span_id == paused_root.context.span_id
    ids = {dict(e.attributes or {})["chatclient.confirmation.id"] for e in (*paused_root.events, resume_span.events[0])}
    assert len(ids) == 1  # the same opaque handle on the pause and the resume
    assert pending.nonce not in str(ids)


@pytest.mark.parametrize("mode", ["call", "astream"])
def test_decision_reasons_are_content_recorded_only_when_captured(otel: Otel, mode: str) -> None:
    client, pending = _pause(otel, mode, Tools(), capture_content=True)
    otel.exporter.clear()
    run_spec(mode, client.prompt().resume(pending, DECISIONS))
    [resume_span] = otel.spans()[-1:]
    events = [(e.name, dict(e.attributes or {})) for e in resume_span.events]
    reasons = {
        attrs["gen_ai.tool.call.id"]: attrs.get("chatclient.confirmation.reason")
        for name, attrs in events
        if name == "chatclient.tool_confirmation.decided"
    }
    assert reasons == {"w1": None, "b1": "on budget", "b2": "duplicate"}


@pytest.mark.parametrize("mode", MODES)
def test_an_advisor_outside_the_loop_spans_the_turn_and_one_inside_spans_each_round(otel: Otel, mode: str) -> None:
    from advisors import SimpleLoggerAdvisor
    from chatclient.advisor import AdvisorOrder

    model = ScriptedChatModel(
        [AssistantMessage(None, tool_calls=[tool_call("weather", {"city": "Oslo"}, id="c1")]), "Sunny."]
    )
    outer, inner = SimpleLoggerAdvisor(order=AdvisorOrder.MEMORY), SimpleLoggerAdvisor()
    client = (
        ChatClient.builder(model)
        .default_tools(Tools())
        .default_advisors(outer, inner)
        .observers(otel.observer())
        .build()
    )
    run_spec(mode, client.prompt("Weather in Oslo?"))

    def advisor(order: int, *children: dict[str, Any]) -> dict[str, Any]:
        attrs = {"chatclient.advisor.name": "SimpleLoggerAdvisor", "chatclient.advisor.order": order}
        return {
            "name": "advisor SimpleLoggerAdvisor",
            "kind": "INTERNAL",
            "attributes": attrs,
            "children": list(children),
        }

    [root] = otel.tree()
    assert root["children"] == [
        advisor(
            AdvisorOrder.MEMORY,
            loop(
                advisor(0, chat(mode, 1, "tool_call")),
                tool_span("weather", "c1"),
                advisor(0, chat(mode, 2, "stop")),
            ),
        )
    ]


@pytest.mark.parametrize("mode", ["call", "astream"])
def test_a_decision_filled_in_by_the_completeness_policy_says_so(otel: Otel, mode: str) -> None:
    from advisors.tool_calling import ToolCallingAdvisor
    from chatclient.tools import DecisionCompleteness, ToolCallingManager

    manager = (
        ToolCallingManager.builder().decision_completeness(DecisionCompleteness.MISSING_UNGATED_MEANS_ALLOW).build()
    )
    model = ScriptedChatModel(
        [
            AssistantMessage(
                None,
                tool_calls=[
                    tool_call("weather", {"city": "Oslo"}, id="w1"),
                    tool_call("book", {"flight": "X1"}, id="b1"),
                ],
            ),
            "Done.",
        ]
    )
    client = (
        ChatClient.builder(model)
        .default_tools(Tools())
        .default_advisors(ToolCallingAdvisor(tool_calling_manager=manager))
        .observers(otel.observer())
        .build()
    )
    paused, _ = run_spec(mode, client.prompt("Weather, then book"))
    pending = awaiting_decision(paused)
    assert pending is not None
    otel.exporter.clear()
    run_spec(mode, client.prompt().resume(pending, ToolCallDecisions.of(ToolCallDecision.allow("b1", approver="bo"))))
    [root] = otel.tree()
    decided = {
        attrs["gen_ai.tool.call.id"]: (
            attrs["chatclient.confirmation.decision.source"],
            attrs.get("chatclient.confirmation.approver.id"),
        )
        for name, attrs in root["events"]
        if name == "chatclient.tool_confirmation.decided"
    }
    assert decided == {"w1": ("policy", None), "b1": ("explicit", "bo")}


@pytest.mark.parametrize("mode", ["call", "astream"])
def test_a_refused_resume_is_an_error_span_with_the_refusal_and_nothing_ran(otel: Otel, mode: str) -> None:
    from chatclient.errors import ToolCallUnauthorizedError

    from ..test_approvers import BOB, Shop, allow, client_for, pause

    shop = Shop()
    client = client_for(shop, "refund", audit=otel.observer())  # type: ignore[arg-type]
    pending = pause(client)
    otel.exporter.clear()
    with pytest.raises(ToolCallUnauthorizedError):
        run_spec(mode, client.prompt().resume(pending, allow("refund", BOB)))
    assert shop.ran == []
    [root] = otel.tree()
    assert root["status"] == "ERROR"
    assert root["attributes"]["error.type"] == "chatclient.errors.ToolCallUnauthorizedError"
    [refused] = [attrs for name, attrs in root["events"] if name == "chatclient.tool_confirmation.decided"]
    assert refused["chatclient.confirmation.decision"] == "refused"
    assert refused["chatclient.confirmation.approver.id"] == "bob"
    assert refused["chatclient.confirmation.refusal"] == "needs role 'manager'"
    assert not any(child["name"].startswith("execute_tool") for child in root["children"][0].get("children", []))
